simulate --model /nonexistent/config.json
