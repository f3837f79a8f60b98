coll allgather --nccl-min-nchannels 8 --nccl-max-nchannels 2
