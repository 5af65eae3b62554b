from attend.cli.entry import main

main()
