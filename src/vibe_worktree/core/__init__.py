"""The ground floor: names, paths, records, locks, git and processes. Imports nothing above it."""
