"""``python -m sdckit`` runs the command-line tool."""

from sdckit.cli import main

if __name__ == "__main__":
    main()
