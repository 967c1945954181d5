# Device run 4: a rail's failure published once NCCL's aborts have begun
# (at most 100 ms after), not when they return (run 3: one survivor at
# 1017 ms, the abort's return). The GPU tests across hosts (the mismatch's
# time is mostly that abort), then the same 18 kills as run 3.
check_hosts_device
KILL_REPEATS=3 KILL_WHERE="two-hosts-of-two two-hosts" check_kills
