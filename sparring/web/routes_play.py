"""Playing: start a game from an experiment config, take your turns, abandon.

Every POST checks the session's CSRF token first; every answer is validated before it reaches
the engine (whole counts within the pool, a probability 0-100, a non-empty message, the turn the
form was made for), and a refused answer changes nothing: the same turn is shown again with the
reason.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from sparring.errors import ConfigError, SparringError
from sparring.web.forms import TooLarge, form_fields, judge_answer, text_answer, whole_number
from sparring.web.game_templates import game_template
from sparring.web.human import PendingTurn, StaleTurn
from sparring.web.play import MAX_GAMES_PER_SESSION, PlayGame, start_game
from sparring.web.sessions import Session
from sparring.web.state import WebState, web_state

router = APIRouter()
log = logging.getLogger(__name__)


async def _form(request: Request) -> dict[str, str]:
    """The posted form, after the CSRF check (403 with a clear message on a bad token)."""
    fields = await form_fields(request)
    session: Session = request.state.session
    if not session.check_csrf(fields.get("csrf")):
        raise HTTPException(403, "the form's security token is missing or out of date; reload the page and retry")
    return fields


def _game(request: Request, game_id: str) -> PlayGame:
    game = request.state.session.games.get(game_id)
    if game is None:  # another session's game is not found, never forbidden: nothing leaks
        raise HTTPException(404, "no such game in this browser session")
    return game  # type: ignore[no-any-return]


def _new_page(request: Request, state: WebState, error: str | None = None, status_code: int = 200,
              **form: Any) -> Response:
    session: Session = request.state.session
    return state.render(request, "play_new.html.jinja", status_code=status_code, title="Play",
                        choices=list(state.choices().values()), error=error, games=list(session.games.values()),
                        form=form)


@router.get("/play")
def play_home(request: Request) -> Response:
    return _new_page(request, web_state(request))


@router.post("/play")
async def play_start(request: Request) -> Response:
    state = web_state(request)
    fields = await _form(request)
    session: Session = request.state.session
    choice = state.choices().get(fields.get("config", ""))
    if choice is None:
        return _new_page(request, state, "choose an experiment from the list", 400, **fields)
    live = [g for g in session.games.values() if not g.done.is_set()]
    if len(live) >= MAX_GAMES_PER_SESSION:
        return _new_page(request, state, f"you already have {len(live)} games in progress; finish or "
                                         "abandon one first", 400, **fields)
    role = fields.get("role") or choice.roles[0]
    if choice.evaluating(role):
        opponents = [fields.get("debater_1") or choice.opponents[0],
                     fields.get("debater_2") or choice.opponents[min(1, len(choice.opponents) - 1)]] \
            if choice.opponents else []
    else:
        opponents = [fields.get("opponent") or choice.opponents[0]] if choice.opponents else []
    try:
        game = start_game(choice, state.runs_dir, state.stores, state.pools, opponents=opponents, role=role,
                          player=fields.get("seat") or None, instance_id=fields.get("instance") or None)
    except ConfigError as e:  # its message without the file: the server's paths are not the visitor's business
        log.warning("web game not started: %s", e)
        return _new_page(request, state, e.message, 400, **fields)
    except SparringError as e:
        return _new_page(request, state, str(e), 400, **fields)
    except Exception as e:  # noqa: BLE001 — a model or dataset that cannot load: say so, keep serving
        log.exception("web game not started")
        return _new_page(request, state, f"could not start the game ({type(e).__name__}); the server's log has "
                                         "the details", 500, **fields)
    session.games[game.id] = game
    game.settle(0)
    return RedirectResponse(f"/play/{game.id}", status_code=303)


def _game_page(request: Request, game: PlayGame, error: str | None = None, status_code: int = 200,
               **form: Any) -> Response:
    state = web_state(request)
    turn = game.pending()
    panel = game.choice.panel
    move_form = (game_template(game.choice.game, panel.move_form)
                 if turn is not None and panel.move_form and turn.tag in panel.move_tags else None)
    values = panel.private_view(game.panel_context) if panel.private_view else None
    return state.render(request, "play.html.jinja", status_code=status_code, title=f"{game.choice.name}: play",
                        game=game, turn=turn, error=error, form=form, values=values, panel=panel,
                        move_form=move_form, shown=_shown(game, turn), options=_options(turn))


def _shown(game: PlayGame, turn: PendingTurn | None) -> list[Any]:
    """What the person is shown now: the messages of the pending turn (exactly the observation),
    or, between turns, those of the last answered one."""
    if turn is not None:
        return list(turn.messages)
    return list(game.history[-1].messages) if game.history else []


def _options(turn: PendingTurn | None) -> list[str]:
    return [o.strip() or o for o in turn.options] if turn is not None and turn.op == "score" else []


@router.get("/play/{game_id}")
def play_page(request: Request, game_id: str) -> Response:
    return _game_page(request, _game(request, game_id))


@router.get("/play/{game_id}/state.json")
def play_state(request: Request, game_id: str) -> Response:
    game = _game(request, game_id)
    turn = game.pending()
    return JSONResponse({"status": game.status, "seq": turn.seq if turn else None})


@router.post("/play/{game_id}/act")
async def play_act(request: Request, game_id: str) -> Response:
    fields = await _form(request)
    game = _game(request, game_id)
    turn = game.pending()
    try:
        seq = whole_number(fields.get("seq", ""), "the turn number")
    except TooLarge as e:
        return _game_page(request, game, str(e), 422)
    except ValueError:
        seq = -1
    if turn is None or seq != turn.seq:
        return _game_page(request, game, "this form is out of date: it is not your turn, or this turn was already "
                                         "answered. The current state is shown below.", 409)
    try:
        if turn.op == "score":
            answer: Any = judge_answer(fields, len(turn.options))
        elif (panel := game.choice.panel).parse_move is not None and turn.tag in panel.move_tags:
            for key, value in fields.items():  # a game's own form: no count is that long (not int()'s limit)
                if key != "text" and value.strip().isdigit():
                    whole_number(value, key)
            answer = panel.parse_move(fields, game.panel_context)
        else:
            answer = text_answer(fields)
    except ValueError as e:
        return _game_page(request, game, str(e), 422 if isinstance(e, TooLarge) else 400, **fields)
    try:
        game.submit(seq, answer)
    except StaleTurn as e:
        return _game_page(request, game, str(e), 409)
    game.settle(seq)
    return RedirectResponse(f"/play/{game.id}", status_code=303)


@router.post("/play/{game_id}/abandon")
async def play_abandon(request: Request, game_id: str) -> Response:
    await _form(request)
    game = _game(request, game_id)
    if not game.done.is_set():
        game.human.abandon("they pressed Abandon")
        game.done.wait(timeout=10)
    return RedirectResponse(f"/play/{game.id}", status_code=303)
