# POST /callbacks/pay behind asgi-idempotency-header, set up as its README
# shows: `Middleware(IdempotencyHeaderMiddleware, backend=backend)` on a
# FastAPI app, here with the in-memory backend the package ships,
# `MemoryBackend(expiry=18)`: its records live 18 s, the contract's window,
# so the probe can reuse a key after it.
#
# The business step records one payment per run (so a double payment is a
# second row for one key) after DOWNSTREAM_DELAY_MS (default 300) of
# "calling the bank". GET /stats counts payments and the keys they were
# made under. LISTEN_ADDR (default 127.0.0.1:8080) is where it serves.
import asyncio
import os
import time

import uvicorn
from fastapi import FastAPI, Request
from fastapi.middleware import Middleware
from idempotency_header_middleware import IdempotencyHeaderMiddleware
from idempotency_header_middleware.backends import MemoryBackend

DELAY = int(os.environ.get("DOWNSTREAM_DELAY_MS", "300")) / 1000
HOST, PORT = os.environ.get("LISTEN_ADDR", "127.0.0.1:8080").split(":")

# One entry per payment made: the idempotency key it was made under.
payments = []

app = FastAPI(
    middleware=[
        Middleware(IdempotencyHeaderMiddleware, backend=MemoryBackend(expiry=18)),
    ]
)


@app.post("/callbacks/pay")
async def pay(request: Request):
    body = await request.json()
    await asyncio.sleep(DELAY)
    payments.append(request.headers.get("idempotency-key", ""))
    return {
        "payment_id": len(payments),
        "order_no": body.get("order_no"),
        "txn_id": body.get("txn_id"),
        "amount": body.get("amount"),
        "date": body.get("date"),
        "status": "paid",
        "paid_at": int(time.time() * 1000),
    }


@app.get("/stats")
async def stats():
    return {"payments": len(payments), "keys": len(set(payments))}


if __name__ == "__main__":
    uvicorn.run(app, host=HOST, port=int(PORT), log_level="warning")
