simulate --nccl-version 2.22 --nccl-algo allreduce:tree
