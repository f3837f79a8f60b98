coll allreduce -t dgx-h100 -b 1K -e 1G -f 32 --format json
