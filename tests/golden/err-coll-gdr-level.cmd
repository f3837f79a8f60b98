coll allreduce --topology test-2x4 --nodes 2 --nccl-net-gdr-level 7x
