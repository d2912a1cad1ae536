import sys

from gradlint.cli import main

sys.exit(main())
