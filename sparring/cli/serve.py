"""`sparring serve [RUNS_DIR]`: the web app (browse runs and transcripts, play against models).

FastAPI and uvicorn are imported inside the command, so `sparring --help` stays instant and the
rest of the CLI works without the `web` extra.
"""

from __future__ import annotations

from pathlib import Path

import typer

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def serve(
    runs_dir: Path = typer.Argument(None, help="Directory of run directories (default $SPARRING_RUNS_DIR or runs/)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on. There is no login: keep it local."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port to listen on."),
    config: list[Path] = typer.Option(None, "--config", "-c",
                                      help="An experiment YAML offered on the play page (repeatable), "
                                           "besides the shipped configs."),
    allow_host: list[str] = typer.Option(None, "--allow-host",
                                         help="A host name the app may be reached as, besides localhost, 127.0.0.1, "
                                              "::1 and --host (repeatable; '*' accepts any: DNS rebinding "
                                              "becomes possible). Other Host headers get 421."),
) -> None:
    """Browse runs, reports and transcripts, and play games against models, in a browser."""
    from rich.console import Console

    from sparring.errors import SparringError
    from sparring.records.store import runs_root

    console = Console(stderr=True)
    try:
        import uvicorn

        from sparring.web.app import create_app
    except ImportError as e:
        raise SparringError(f"the web app needs the `web` extra ({e.name} is missing): "
                            "pip install 'sparring[web]'") from None
    if host not in LOCAL_HOSTS:
        console.print(f"[bold yellow]warning: listening on {host}: the web app has no authentication; anyone "
                      "who can reach this port can read every run and start games.[/bold yellow]")
    root = runs_root(runs_dir)
    hosts = list(allow_host or [])
    if host not in ("0.0.0.0", "::", ""):  # the name it is bound to is one it is reached as
        hosts.append(host)
    app = create_app(root, configs=list(config or []), allow_hosts=hosts)
    console.print(f"serving {root} at http://{'[' + host + ']' if ':' in host else host}:{port}/ (Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
