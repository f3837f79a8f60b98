plan --model llama2-7b --tokens 1T --deadline 10d --gpu fat-tree-h100-1024 --max-nodes 64 --network simgrid --set network.oversubscription=4:1 --finalists 3 --jobs 2
