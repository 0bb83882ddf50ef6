from spec_loop.cli import main

main()
