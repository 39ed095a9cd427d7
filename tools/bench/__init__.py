"""Modules of tools/bench/bench-e2e: the network namespaces (netns), the machine
load and CPU accounting (machine), the workload shared by every system
(workload), the per-node trainer process (worker) and the payload
minimum each system must send (payload)."""
