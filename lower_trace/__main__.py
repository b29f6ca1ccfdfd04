from lower_trace.cli.main import main

raise SystemExit(main())
