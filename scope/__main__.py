from scope.cli import entry_point

entry_point()
