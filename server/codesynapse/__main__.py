from codesynapse.cli import main

raise SystemExit(main())
