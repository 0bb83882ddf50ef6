from shared.app.cli import main

main()
