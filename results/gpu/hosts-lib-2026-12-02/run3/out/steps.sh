# Device run 3 (tools/gpu-run.sh, its first use): more kills across
# virtual hosts, the killed rank going down from the last: 2 hosts of 2
# ranks, 3 times in Open, calls and Close (ranks 3, 2, 1); 2 hosts of
# 1 rank, 3 more times each (ranks 1, 0, 1), which with runs 1 and
# aborts-2026-12-02 makes 10 of each after the abort's fix.
KILL_REPEATS=3 KILL_WHERE=two-hosts-of-two check_kills
KILL_REPEATS=3 KILL_WHERE=two-hosts check_kills
