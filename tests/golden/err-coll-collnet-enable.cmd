coll allreduce --topology test-2x4 --nodes 2 --nccl-collnet-enable 2
