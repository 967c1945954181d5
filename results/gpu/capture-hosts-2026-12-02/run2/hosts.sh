#!/bin/bash
export NCCL_HOSTID=detcoll-vhost-$RANK
exec "$@"
