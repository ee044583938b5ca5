"""Which TextArena environments run here, probed by playing their first observation.

Some environments need data downloaded at run time (NLTK corpora, word lists) or a network: the
probe makes and resets each one offline and reports those as unavailable with the reason, so a
config naming one fails with that reason instead of mid-run.
"""

from __future__ import annotations

from typing import Any

from sparring.errors import SparringError

VERSION = "0.7.4"  # the TextArena release this adapter is tested with (its API changes between minors)
SHIPPED = ("TicTacToe-v0", "KuhnPoker-v0", "SimpleNegotiation-v0")  # configs, bench entries, baselines


def textarena() -> Any:
    """The installed `textarena` module, or a clear error naming the extra."""
    try:
        import textarena
    except ImportError:
        raise SparringError("game 'textarena' needs TextArena: pip install 'sparring[textarena]' "
                            f"(textarena=={VERSION})") from None
    return textarena


def make(env_id: str, **kwargs: Any) -> Any:
    """A new environment; `kwargs` go to its constructor over the ones its id registers."""
    ta = textarena()
    from sparring.games.textarena.variants import VARIANTS, make_variant

    if env_id in VARIANTS:
        try:
            return make_variant(env_id, **kwargs)
        except TypeError as e:
            raise SparringError(f"TextArena environment {env_id!r} does not take {sorted(kwargs)}: {e}") from None
    if env_id not in env_ids():
        known = [e for e in env_ids() if e.split("-")[0].lower() == env_id.split("-")[0].lower()][:5]
        hint = f" (did you mean {', '.join(known)}?)" if known else " (`sparring textarena list` shows them)"
        raise SparringError(f"TextArena {ta_version()} has no environment {env_id!r}{hint}")
    try:
        return ta.make(env_id=env_id, **kwargs)
    except TypeError as e:  # a keyword its constructor does not take
        raise SparringError(f"TextArena environment {env_id!r} does not take {sorted(kwargs)}: {e}") from None
    except Exception as e:  # an environment whose module needs an API key, a download, a package
        raise SparringError(f"TextArena environment {env_id!r} cannot be made here: {_why(e)}") from None


def ta_version() -> str:
    import importlib.metadata as md

    try:
        return md.version("textarena")
    except md.PackageNotFoundError:
        return "(not installed)"


def env_ids() -> list[str]:
    """Every environment id TextArena registers (its registry is public: `textarena.envs.registration`)."""
    textarena()
    from textarena.envs.registration import ENV_REGISTRY

    from sparring.games.textarena.variants import VARIANTS

    return sorted([*ENV_REGISTRY, *VARIANTS])


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, LookupError) or "nltk" in text.lower():
        return f"it needs NLTK data downloaded at run time ({text[:120]})"
    if "api key" in text.lower() or "api_key" in text.lower():
        return f"it needs a hosted model's API key ({text[:120]})"
    if isinstance(e, OSError):
        return f"it needs a file or the network ({type(e).__name__}: {text[:120]})"
    return f"{type(e).__name__}: {text[:160]}"


def probe(env_id: str) -> tuple[int | None, str | None]:
    """(players, None) if `env_id` makes, resets and observes offline with that many players
    (2 tried first); (None, why not) otherwise."""
    import contextlib
    import io

    why = ""
    for players in (2, 1, 3, 4):
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                env = make(env_id)
                env.reset(num_players=players, seed=0)
                _, obs = env.get_observation()
            if not isinstance(obs, str):
                return None, "its observation is not text"
            return players, None
        except SparringError as e:
            return None, str(e)
        except AssertionError as e:  # "The number of players has to be ..."
            why = str(e) or why
        except Exception as e:
            return None, _why(e)
    return None, why or "no number of players from 1 to 4 starts it"
