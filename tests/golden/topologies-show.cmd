topologies --show test-2x4
