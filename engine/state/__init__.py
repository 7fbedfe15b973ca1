"""What earlier builds left behind: the no-op record, action state and keys, scans."""
