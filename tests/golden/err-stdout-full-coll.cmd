coll allgather -t test-2x4 -b 1M -e 4M >/dev/full
