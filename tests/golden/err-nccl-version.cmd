simulate --nccl-version 2.16
