coll allgather --topology dgx-h100 -b 1K -e 8G -f 4
