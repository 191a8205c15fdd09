"""The local sites the web environment visits: a small bookshop of our own and the MiniWoB++ pages.

Why: recordings must be offline and repeatable, yet show what real web agents meet — navigation
between pages, forms that answer with validation errors, and state that persists across pages (a
cart, a profile, orders). The shop keeps its state in one :class:`ShopState` per site (no cookies,
no clock, no randomness), so the same actions always give the same pages. MiniWoB++ pages are the
HTML files the ``miniwob`` package ships, served under ``/wob/`` (pages in ``/wob/miniwob/``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

BOOKS: tuple[tuple[str, str, str, int, str], ...] = (
    ("b1", "The Pragmatic Gardener", "Ada Moss", 1850, "Practical advice for small urban gardens."),
    ("b2", "Rivers of Stone", "Jonas Field", 2400, "A history of the bridges of northern Europe."),
    ("b3", "Learning to Sail", "Mira Coast", 1299, "From knots to navigation, for first-time sailors."),
    ("b4", "Quiet Kitchens", "Leo Marsh", 3150, "Slow recipes for long winter evenings."),
    ("b5", "The Last Lighthouse", "Ada Moss", 999, "A novel about a keeper and a storm."),
    ("b6", "Numbers at Work", "Ravi Chand", 2775, "Everyday statistics without the jargon."),
)
"""(id, title, author, price in cents, blurb)."""
SHIPPING = {"standard": ("Standard (5-7 days)", 0), "express": ("Express (1-2 days)", 900)}


def _money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


@dataclass
class ShopState:
    """Everything the shop remembers between pages (reset per episode)."""

    cart: dict[str, int] = field(default_factory=dict)
    name: str = ""
    newsletter: bool = False
    orders: list[dict[str, Any]] = field(default_factory=list)
    flash: str = ""

    def take_flash(self) -> str:
        text, self.flash = self.flash, ""
        return text


def miniwob_dir() -> Path | None:
    """The HTML folder of the installed ``miniwob`` package (found without importing it), or None."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return None
    html = Path(next(iter(spec.submodule_search_locations))) / "html"
    return html if (html / "miniwob").is_dir() else None


def _page(state: ShopState, title: str, body: str) -> str:
    count = sum(state.cart.values())
    who = f"Signed in as {escape(state.name)}" if state.name else "Guest"
    flash = state.take_flash()
    note = f'<p role="status">{escape(flash)}</p>' if flash else ""
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{escape(title)} - Loopback Books"
            f"</title></head><body><header><nav aria-label=Main><a href=/>Home</a> "
            f"<a href=/catalog>Catalog</a> "
            f"<a href=/cart>Cart ({count})</a> <a href=/orders>Orders</a> <a href=/account>Account</a></nav>"
            f"<span>{who}</span></header><main><h1>{escape(title)}</h1>{note}{body}</main>"
            f"<footer><p>Loopback Books, a local test shop</p></footer></body></html>")


def _book(book_id: str) -> tuple[str, str, str, int, str] | None:
    return next((b for b in BOOKS if b[0] == book_id), None)


def _book_list(books: list[tuple[str, str, str, int, str]]) -> str:
    items = "".join(f'<li><a href="/book/{b[0]}">{escape(b[1])}</a> by {escape(b[2])}, {_money(b[3])}</li>'
                    for b in books)
    return f"<ul>{items}</ul>"


def _errors(errors: list[str]) -> str:
    if not errors:
        return ""
    items = "".join(f"<li>{escape(e)}</li>" for e in errors)
    return f'<div role="alert"><p>Please correct the following:</p><ul>{items}</ul></div>'


def build_app(state: ShopState, miniwob: Path | None = None) -> Any:
    """The Starlette app of one site: the shop over ``state``, and MiniWoB++ under ``/miniwob/``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    def html(title: str, body: str, status: int = 200) -> Response:
        return HTMLResponse(_page(state, title, body), status_code=status)

    async def home(_: Request) -> Response:
        return html("Welcome", "<p>Find a book in the catalog, fill your cart and check out.</p>"
                    "<h2>Staff picks</h2>" + _book_list([BOOKS[2], BOOKS[4]]))

    async def catalog(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        sort = request.query_params.get("sort", "title")
        books = [b for b in BOOKS if q.lower() in (b[1] + " " + b[2]).lower()]
        books.sort(key=lambda b: b[3] if sort == "price" else b[1])
        options = "".join(f'<option value="{v}"{" selected" if v == sort else ""}>{label}</option>'
                          for v, label in (("title", "Title"), ("price", "Price")))
        form = (f'<form role="search" action="/catalog"><label>Search <input type="search" name="q" '
                f'value="{escape(q)}"></label> <label>Sort by <select name="sort">{options}</select></label> '
                f"<button>Search</button></form>")
        listing = _book_list(books) if books else "<p>No books match.</p>"
        found = f"<p>{len(books)} book(s) found</p>" + listing
        return html("Catalog", form + found)

    async def book(request: Request) -> Response:
        b = _book(request.path_params["book_id"])
        if b is None:
            return html("Not found", "<p>There is no such book.</p><a href=/catalog>Back to catalog</a>", 404)
        qty = "".join(f"<option>{n}</option>" for n in (1, 2, 3))
        return html(b[1], f"<p>by {escape(b[2])}</p><p>Price: {_money(b[3])}</p><p>{escape(b[4])}</p>"
                    f'<form method=post action="/cart/add"><input type=hidden name=book value="{b[0]}">'
                    f"<label>Quantity <select name=qty>{qty}</select></label> <button>Add to cart</button>"
                    "</form><a href=/catalog>Back to catalog</a>")

    async def cart_add(request: Request) -> Response:
        form = await request.form()
        b = _book(str(form.get("book", "")))
        qty = int(str(form.get("qty", "1"))) if str(form.get("qty", "1")).isdigit() else 1
        if b is not None:
            state.cart[b[0]] = min(9, state.cart.get(b[0], 0) + max(1, min(qty, 3)))
            state.flash = f"Added {qty} x {b[1]} to your cart."
        return RedirectResponse("/cart", status_code=303)

    async def cart_remove(request: Request) -> Response:
        form = await request.form()
        removed = state.cart.pop(str(form.get("book", "")), None)
        b = _book(str(form.get("book", "")))
        if removed and b:
            state.flash = f"Removed {b[1]}."
        return RedirectResponse("/cart", status_code=303)

    def cart_total() -> int:
        return sum(b[3] * n for k, n in state.cart.items() if (b := _book(k)) is not None)

    async def cart(_: Request) -> Response:
        if not state.cart:
            return html("Your cart", "<p>Your cart is empty.</p><a href=/catalog>Browse the catalog</a>")
        rows = "".join(
            f"<tr><td>{escape(b[1])}</td><td>{n}</td><td>{_money(b[3] * n)}</td><td><form method=post "
            f'action="/cart/remove"><input type=hidden name=book value="{b[0]}"><button>Remove {escape(b[1])}'
            f"</button></form></td></tr>" for k, n in state.cart.items() if (b := _book(k)))
        return html("Your cart", f"<table><tr><th>Book</th><th>Quantity</th><th>Subtotal</th><th></th></tr>"
                    f"{rows}</table><p>Total: {_money(cart_total())}</p>"
                    "<a href=/checkout>Proceed to checkout</a>")

    def checkout_form(values: dict[str, str], errors: list[str]) -> str:
        ship = "".join(f'<option value="{k}"{" selected" if values.get("shipping") == k else ""}>{label}'
                       f"</option>" for k, (label, _) in SHIPPING.items())
        terms = " checked" if values.get("terms") else ""
        return (_errors(errors) + f"<p>Order total before shipping: {_money(cart_total())}</p>"
                '<form method=post action="/checkout" novalidate>'
                f'<label>Full name <input name=name value="{escape(values.get("name", ""))}" required>'
                "</label>"
                f'<label>Email <input type=email name=email value="{escape(values.get("email", ""))}" '
                f"required></label><label>Shipping <select name=shipping>{ship}</select></label>"
                f"<label><input type=checkbox name=terms{terms}> I accept the terms</label>"
                "<button>Place order</button></form>")

    async def checkout(request: Request) -> Response:
        if request.method == "GET":
            return html("Checkout", checkout_form({"name": state.name}, []))
        form = {k: str(v) for k, v in (await request.form()).items()}
        errors = []
        if not state.cart:
            errors.append("Your cart is empty.")
        if not form.get("name", "").strip():
            errors.append("Full name is required.")
        email = form.get("email", "").strip()
        if not email:
            errors.append("Email is required.")
        elif "@" not in email or "." not in email.rsplit("@", 1)[-1]:
            errors.append(f"{email} is not a valid email address.")
        if not form.get("terms"):
            errors.append("You must accept the terms.")
        if errors:
            return html("Checkout", checkout_form(form, errors), 422)
        label, fee = SHIPPING.get(form.get("shipping", ""), SHIPPING["standard"])
        number = 1001 + len(state.orders)
        state.orders.append({"number": number, "name": form["name"].strip(), "email": email,
                             "shipping": label,
                             "items": dict(state.cart), "total": cart_total() + fee})
        state.cart.clear()
        state.flash = f"Thank you, {form['name'].strip()}! Your order was placed."
        return RedirectResponse(f"/orders/{number}", status_code=303)

    async def orders(_: Request) -> Response:
        if not state.orders:
            return html("Orders", "<p>You have not placed any orders yet.</p>")
        items = "".join(f'<li><a href="/orders/{o["number"]}">Order #{o["number"]}</a>, {_money(o["total"])}'
                        "</li>" for o in state.orders)
        return html("Orders", f"<ul>{items}</ul>")

    async def order(request: Request) -> Response:
        number = request.path_params["number"]
        o = next((o for o in state.orders if o["number"] == number), None)
        if o is None:
            return html("Not found", "<p>There is no such order.</p>", 404)
        lines = "".join(f"<li>{escape(b[1])} x {n}</li>" for k, n in o["items"].items() if (b := _book(k)))
        return html(f"Order #{number}", f"<p>Ship to {escape(o['name'])} ({escape(o['email'])}), "
                    f"{escape(o['shipping'])}</p><ul>{lines}</ul><p>Total paid: {_money(o['total'])}</p>")

    async def account(request: Request) -> Response:
        errors: list[str] = []
        if request.method == "POST":
            form = {k: str(v) for k, v in (await request.form()).items()}
            name = form.get("display_name", "").strip()
            if len(name) < 2:
                errors.append("Display name must have at least 2 characters.")
            else:
                state.name, state.newsletter = name, bool(form.get("newsletter"))
                state.flash = "Profile saved."
                return RedirectResponse("/account", status_code=303)
        checked = " checked" if state.newsletter else ""
        return html("Account", _errors(errors) + '<form method=post action="/account" novalidate>'
                    f'<label>Display name <input name=display_name value="{escape(state.name)}"></label>'
                    f"<label><input type=checkbox name=newsletter{checked}> Send me the newsletter</label>"
                    "<button>Save profile</button></form>", 422 if errors else 200)

    routes: list[Any] = [
        Route("/", home), Route("/catalog", catalog), Route("/book/{book_id}", book),
        Route("/cart", cart), Route("/cart/add", cart_add, methods=["POST"]),
        Route("/cart/remove", cart_remove, methods=["POST"]),
        Route("/checkout", checkout, methods=["GET", "POST"]), Route("/orders", orders),
        Route("/orders/{number:int}", order), Route("/account", account, methods=["GET", "POST"])]
    if miniwob is not None:
        routes.append(Mount("/wob", app=StaticFiles(directory=str(miniwob))))
    return Starlette(routes=routes)
