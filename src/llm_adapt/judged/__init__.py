"""The run as read and judged: its result files as one record (data.py) and the verdict of the whole run
(verdict.py). run/, report/ and upstream/ read it; it reads none of them."""
