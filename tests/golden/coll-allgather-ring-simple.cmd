coll allgather --topology dgx-h100 -b 1K -e 8G -f 16 --nccl-algo Ring --nccl-proto Simple
