"""``shardloader demo``: placeholder replaced below."""


def register(commands) -> None:
    parser = commands.add_parser("demo", help="pack a real dataset and train on it")
    parser.set_defaults(run=lambda args: 0)
