from attend.entry import main

main()
