#!/bin/bash
export NCCL_HOSTID=detcoll-vhost-$((RANK / 1))
exec "$@"
