# Device run 5, the last of the session: the review's mends (a mismatch
# only from a completed gather; the module of two leaves loaded before any
# capture; Close frees a graph's scratch only on an idle device; the
# bounded waits for an abort's return at 2 s again). The GPU tests across
# hosts, then 6 more kills in each of Open, calls and Close, at 2 hosts of
# 2 ranks and of 1 (36), which with run 4's make 9 of each since a rail's
# failure is published as its abort begins.
check_hosts_device
KILL_REPEATS=6 KILL_WHERE="two-hosts-of-two two-hosts" check_kills
