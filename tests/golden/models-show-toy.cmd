models --show toy
