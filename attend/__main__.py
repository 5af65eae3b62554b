from attend.cli import main

main()
