"""Listings that stop at their caps: name search, directory trees, sizes and duplicates."""
