from build_loop.cli import main

main()
