simulate --set intra.bandwidth=300 --trace partial.json
