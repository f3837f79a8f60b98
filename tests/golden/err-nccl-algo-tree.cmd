simulate --nccl-algo Tree
