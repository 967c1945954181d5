#!/bin/bash
export NCCL_HOSTID=detcoll-vhost-$((RANK / 2))
exec "$@"
