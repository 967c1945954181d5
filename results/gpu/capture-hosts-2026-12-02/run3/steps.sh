# Device run 3: the GPU tests across hosts again (the graph mismatch test
# mended), and kills across hosts since the signature check moved onto the
# device (the host's communicator of one rank now runs a monitor): 2 hosts
# of 2 ranks and 2 hosts of 1, 3 times in each of Open, calls and Close.
check_hosts_device
KILL_REPEATS=3 KILL_WHERE="two-hosts-of-two two-hosts" check_kills
