simulate --nodes 1000000
