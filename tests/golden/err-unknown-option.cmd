simulate --foo
