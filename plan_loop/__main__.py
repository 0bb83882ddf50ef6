from plan_loop.cli import main

main()
