from vfs_mcp.cli import main

raise SystemExit(main())
