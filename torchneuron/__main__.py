from torchneuron.cli import main

raise SystemExit(main())
