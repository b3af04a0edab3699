"""POST /callbacks/pay behind django-idempotency-key, set up as its README
shows: `idempotency_key.middleware.IdempotencyKeyMiddleware` in MIDDLEWARE
(every unsafe view needs an `Idempotency-Key`) and no `IDEMPOTENCY_KEY`
settings, so the defaults hold: `MemoryKeyStorage`, the per-process
`ThreadLock`, conflict status 409.

The business step records one payment per run (so a double payment is a
second row for one key) after DOWNSTREAM_DELAY_MS (default 300) of
"calling the bank". GET /stats counts payments and the keys they were made
under.

    python app.py runserver --noreload 127.0.0.1:8080
"""

import json
import os
import sys
import threading
import time

from django.conf import settings
from django.http import JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    SECRET_KEY="conformance-table-only",
    MIDDLEWARE=[
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "idempotency_key.middleware.IdempotencyKeyMiddleware",
    ],
    INSTALLED_APPS=[],
)

DELAY = int(os.environ.get("DOWNSTREAM_DELAY_MS", "300")) / 1000

# One entry per payment made: the idempotency key it was made under.
payments = []
payments_lock = threading.Lock()


@csrf_exempt
def pay(request):
    if request.method != "POST":
        return JsonResponse({"error": "method not allowed"}, status=405)
    callback = json.loads(request.body)
    time.sleep(DELAY)
    with payments_lock:
        payments.append(request.headers.get("Idempotency-Key", ""))
        payment_id = len(payments)
    return JsonResponse(
        {
            "payment_id": payment_id,
            "order_no": callback["order_no"],
            "txn_id": callback["txn_id"],
            "amount": callback["amount"],
            "date": callback["date"],
            "status": "paid",
            "paid_at": int(time.time() * 1000),
        }
    )


def stats(request):
    with payments_lock:
        return JsonResponse({"payments": len(payments), "keys": len(set(payments))})


urlpatterns = [
    path("callbacks/pay", pay),
    path("stats", stats),
]

if __name__ == "__main__":
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
