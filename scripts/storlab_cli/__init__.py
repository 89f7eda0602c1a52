"""storlab command line: thin orchestration over the C emulator."""
