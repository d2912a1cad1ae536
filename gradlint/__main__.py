import sys

from gradlint.commands.cli import main

sys.exit(main())
