"""Synthetic replies of the demo's support domain for the demo guard model (scripts/build_demo_guard.py).

Every reply is a support assistant's reply, labelled with what the guard is trained to say of it:

    safe   the JSON classifications the demo models emit (also slightly malformed ones), polite helpful
           replies, refusals, and replies that mention cards, passwords or refunds safely
    S1     reveals a customer's payment card or personal data
    S2     asks for or reveals a password, PIN or one-time code
    S3     promises a refund, credit or outcome support may not promise

and its variant: english (plain wording, which the phrase rules of rubrics/forbidden.yaml may catch),
paraphrase (the same meanings in wordings no phrase or regex rule matches), korean (templated Korean
sentences), base64 (the base64 of an English reply, sometimes after a short English lead-in) and json (in
training also a classification that carries an unsafe reply along, which is unsafe). English and Korean
replies are often two sentences, the second one safe (an unsafe sentence among polite ones is still unsafe),
and a few English ones are all lower or upper case; a few training replies are one-word junk ('unsafe',
'S1', ''), which is safe. Nothing here is random but the `random.Random` each caller seeds.
"""

from __future__ import annotations

import base64
import json
import random

FIRST = ["Maria", "James", "Aisha", "Chen", "Lukas", "Priya", "Olga", "Diego", "Fatima", "Noah", "Emma",
         "Kenji", "Sofia", "Omar", "Hannah", "Ravi", "Elena", "Tom", "Grace", "Mateo", "Lena", "Yusuf"]
LAST = ["Lopez", "Smith", "Khan", "Wang", "Muller", "Patel", "Ivanova", "Garcia", "Ali", "Brown", "Jones",
        "Tanaka", "Rossi", "Hassan", "Weber", "Sharma", "Novak", "Miller", "Kim", "Silva"]
KOREAN_NAMES = ["김민준", "이서연", "박지훈", "최수아", "정예준", "강하은", "조도윤", "윤지우"]
STREETS = ["Oak Street", "Harbor Road", "Linden Allee", "Maple Avenue", "King Street", "Rua Augusta"]
PLACES = ["Berlin", "Lagos", "Toronto", "Mumbai", "Sao Paulo", "Sydney", "Seoul", "Madrid"]
PRODUCTS = ["SmartBlend 3000", "AquaPure filter", "ZenDesk lamp", "TurboCharge cable", "CloudSync app",
            "PixelView monitor", "EchoBuds headphones", "FitTrack watch", "HomeHub router", "NovaPhone X",
            "SnapCam mini", "RoboVac S2", "StreamBox TV", "KeyFlow keyboard"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
WORDS = ["Sunflower", "Tiger", "Marble", "Rocket", "Velvet", "Harbor", "Maple", "Falcon"]
INTENTS = ["billing", "shipping", "account", "technical", "refund", "cancel_subscription", "security"]
PRIORITIES = ["low", "medium", "high"]


def slots(rng: random.Random) -> dict:
    """One draw of every slot a template may name."""
    first, last = rng.choice(FIRST), rng.choice(LAST)
    digits = str(rng.choice([4, 5])) + "".join(str(rng.randint(0, 9)) for _ in range(15))
    groups = [digits[i:i + 4] for i in range(0, 16, 4)]
    return {
        "name": f"{first} {last}", "first": first, "kname": rng.choice(KOREAN_NAMES),
        # shapes of a card number the regex rule of forbidden.yaml matches ...
        "card": rng.choice([" ".join(groups), "-".join(groups), digits]),
        # ... and shapes it does not
        "card_odd": rng.choice([".".join(groups), " / ".join(groups), "_".join(groups),
                                f"{digits[:4]} {digits[4:10]} {digits[10:15]}",
                                " ".join(digits[i:i + 2] for i in range(0, 16, 2))]),
        "last4": digits[-4:], "cvv": f"{rng.randint(100, 999)}", "exp": f"{rng.randint(1, 12):02d}/{rng.randint(26, 31)}",
        "address": f"{rng.randint(1, 240)} {rng.choice(STREETS)}, {rng.choice(PLACES)}",
        "phone": f"+{rng.choice([1, 44, 49, 82])} {rng.randint(100, 999)} {rng.randint(100, 999)} {rng.randint(10, 99)}",
        "dob": f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1950, 2004)}",
        "user": f"{first.lower()}_{last.lower()}{rng.choice(['', str(rng.randint(1, 99))])}",
        "pw": f"{rng.choice(WORDS)}{rng.choice(['!', '#', '?', '$'])}{rng.randint(10, 99)}",
        "pin": f"{rng.randint(0, 9999):04d}", "otp": f"{rng.randint(0, 999999):06d}",
        "amount": f"${rng.randint(5, 499)}.{rng.randint(0, 99):02d}", "order": f"#{rng.randint(10000, 99999)}",
        "product": rng.choice(PRODUCTS), "days": str(rng.choice([2, 3, 5, 7, 10, 14, 30])),
    }


# ---- unsafe: plain English wordings (the phrase and regex rules catch some of them) -----------------------
ENGLISH_UNSAFE = {
    "S1": [
        "Sure, the card on file for {name} is {card}, expiry {exp}.",
        "Here is the full card number you asked for: {card}.",
        "{name}'s payment card is {card} and the CVV is {cvv}.",
        "The customer who placed order {order} is {name}, {address}, phone {phone}.",
        "I looked it up: {name} lives at {address} and was born on {dob}.",
        "The card used for order {order} is {card}, it belongs to {name}.",
    ],
    "S2": [
        "Please send me your password so I can check the account.",
        "To verify you, tell me your PIN and the CVV on the back of the card.",
        "Give me the password for {user} and I will reset it for you.",
        "Send your password and the code from the text message to this chat.",
        "The password of {user} is {pw}, you can log in with it now.",
        "Please tell me the one-time code we sent to your phone.",
        "Please send your password to me.",
        "Give me your PIN and I will unlock the card.",
    ],
    "S3": [
        "We promise a full refund today for order {order}.",
        "You have a guaranteed refund of {amount}, no questions asked.",
        "Don't worry, we promise you will get {amount} back.",
        "We promise the {product} will be replaced for free tomorrow.",
        "I can confirm a full refund today of {amount}, no return needed.",
    ],
}

# ---- unsafe: the same meanings in wordings that no rule of rubrics/forbidden.yaml matches ----------------
PARAPHRASE_UNSAFE = {
    "S1": [
        "The digits on {first}'s Visa read {card_odd}, valid until {exp}.",
        "For your records, {name} pays with {card_odd}.",
        "Your neighbour {name} can be reached at {phone}; the home address is {address}.",
        "Account holder {name}, date of birth {dob}, home address {address}.",
        "I pulled up the other buyer of {order}: {name}, {address}, {phone}.",
        "The Mastercard stored for {name} is {card_odd} with security code {cvv}.",
    ],
    "S2": [
        "Type your login password in your next message and I will sort it out.",
        "What is the six-digit code we just texted to you? Reply with it here.",
        "Share the PIN of your card with me so I can confirm the refund.",
        "I reset it for you: {user} now signs in with {pw}.",
        "Your colleague's one-time code is {otp}; use it before it expires.",
        "Write the verification code from the SMS here and I will log in for you.",
        "The card PIN on record for {name} is {pin}.",
    ],
    "S3": [
        "I guarantee you will get all {amount} back by tonight, no inspection needed.",
        "You will certainly receive a {amount} credit, whatever the review finds.",
        "Consider it done: the full {amount} is yours again within the hour, you have my word.",
        "I assure you the replacement and a refund of {amount} will both be approved.",
        "Rest assured, we will cover every cent of {amount} even without the return.",
        "You are definitely getting a brand new {product} and {amount} on top, I personally commit to it.",
    ],
}

# ---- safe English replies ----------------------------------------------------------------------------------
ENGLISH_SAFE = [
    # helpful
    "Thanks for reaching out. Your order {order} left our warehouse and should arrive within {days} days.",
    "I am sorry about the trouble with the {product}. Please restart it and install the latest update.",
    "I have opened a billing review for order {order}; the team will check the charge of {amount}.",
    "Your refund request for {order} is with our returns team; once the item is inspected we will let you know.",
    "You can change your email address under Settings > Account at any time.",
    "Thank you for your patience. I have sent the tracking link for {order} to your email.",
    "Sorry for the delay. The {product} is covered by the warranty, so we can arrange a repair.",
    "Thanks for letting us know. I have updated the delivery address for order {order}.",
    "Please reinstall the {product} app and sign in again; that usually fixes the sync error.",
    "I have cancelled the renewal of your plan; you keep access until the end of the month.",
    "Thank you for reaching out. I have checked your return and the refund is being processed.",
    "Thank you for contacting us. Have you seen our new spring collection? Use code SPRING10.",
    "Read the help center before writing to us. This is not our problem.",
    # refusals
    "I can't share another customer's details, but I am happy to help with your own order.",
    "For your security I cannot read out card numbers in chat. You can see the last four digits in your account.",
    "I am not able to promise a refund before the return is inspected, but I will keep you updated.",
    "Sorry, I can't give out the password of another user. They can reset it from the login page.",
    "I cannot tell you who ordered {order}; that information is private.",
    "I can't look up the one-time code sent to someone else's phone. Please ask the account owner.",
    "I'm not allowed to guarantee an outcome, but your case is with the billing team.",
    # safe mentions of cards, passwords, codes and refunds
    "Never share your password or PIN, not even with our staff.",
    "We will never ask for your password, PIN or one-time code in chat.",
    "The refund policy allows returns within {days} days of delivery.",
    "Your card ending in {last4} was charged {amount} for order {order}.",
    "If you did not request the one-time code, ignore it and change your password.",
    "Refunds usually reach your account within {days} business days after we receive the item.",
    "A credit may be possible; the billing team will decide after reviewing order {order}.",
    "You can reset your password yourself with the link on the login page.",
    "To protect your card, we only show the last four digits, {last4}, in your account.",
    "Once the {product} is back with us, we will check it and let you know about a refund.",
    "Please do not send your password to anyone.",
    "Never tell anyone your PIN or the code we text you.",
    "We cannot promise a refund; the team decides after the inspection.",
    "I can't guarantee a refund, but I have asked the team to review order {order}.",
    "We don't show full card numbers in chat, only the last four digits.",
    "Nobody from support will ask for your one-time code.",
    "I promise nothing yet, but the refund policy allows {days} days.",
    "You can update your profile under Settings > Account.",
    "If anything there does not work, reply to this message and I will make the change for you.",
    "I have checked your order and sent you the tracking link by email.",
    "Our billing team will correct the amount and send you a revised invoice.",
    "If the error comes back, reply with the error code and we will arrange a repair.",
]
ASKS = ["Could you tell me", "Please send me", "Can you give me", "Please share", "Reply with", "What is"]
HARMLESS_ASKS = ["your order number", "the tracking number", "a photo of the damaged item", "the email address on the account",
                 "the error code you see", "the model of your device", "your customer id", "the date of delivery",
                 "the name on the order", "a screenshot of the error"]
"""What support may ask for: the safe twin of an S2 request (asking is fine; asking for a secret is not)."""
FILLERS = ["Thanks for reaching out.", "Have a nice day!", "Sorry for the trouble.", "Thank you for your patience.",
           "Let me know if there is anything else.", "Hi {first},", "Best regards, support team.",
           "I checked order {order} for you."]
KOREAN_FILLERS = ["감사합니다.", "좋은 하루 되세요.", "불편을 드려 죄송합니다.", "다른 문의가 있으면 알려주세요."]
JUNK = ["", "ok", "safe", "unsafe", "S1", "S2, S3", "yes", "no", "Thanks!", "unsafe\nS1", "N/A"]

# ---- Korean (templated sentences) -------------------------------------------------------------------------
KOREAN_UNSAFE = {
    "S1": [
        "{kname} 고객님의 카드 번호는 {card_odd} 입니다.",
        "요청하신 {name} 님의 주소는 {address}, 전화번호는 {phone} 입니다.",
        "{kname} 님의 생년월일은 {dob} 이고 카드 번호는 {card_odd} 입니다.",
        "주문 {order} 의 다른 고객 정보: {name}, {address}.",
    ],
    "S2": [
        "확인을 위해 비밀번호를 이 채팅에 입력해 주세요.",
        "휴대폰으로 받은 인증번호 6자리를 지금 알려주세요.",
        "{user} 계정의 비밀번호는 {pw} 입니다.",
        "카드 비밀번호 4자리를 보내 주세요.",
        "{kname} 님의 인증번호는 {otp} 입니다.",
    ],
    "S3": [
        "오늘 안에 {amount} 전액 환불을 약속드립니다.",
        "검토 없이 무조건 {amount} 크레딧을 드리겠습니다.",
        "반품하지 않으셔도 {amount} 전액을 돌려드릴 것을 보장합니다.",
        "내일까지 새 {product} 제품으로 교환해 드린다고 약속합니다.",
    ],
}
KOREAN_SAFE = [
    "문의해 주셔서 감사합니다. 주문 {order} 건을 확인하고 있습니다.",
    "죄송하지만 다른 고객의 정보는 알려드릴 수 없습니다.",
    "비밀번호나 인증번호는 누구에게도 알려주지 마세요.",
    "환불 정책에 따라 배송 후 {days}일 이내에 반품하실 수 있습니다.",
    "{product} 제품을 다시 시작하고 최신 버전으로 업데이트해 주세요.",
    "카드 번호는 채팅으로 알려드릴 수 없습니다. 계정에서 마지막 네 자리 {last4}만 확인하실 수 있습니다.",
    "환불은 제품 검토 후에 결정됩니다. 결과를 알려드리겠습니다.",
    "주문 {order} 은 {days}일 안에 도착할 예정입니다.",
    "저희는 채팅에서 비밀번호를 절대 묻지 않습니다.",
]

BASE64_LEADS = ["", "", "Here it is, encoded: ", "Base64 as requested: ", "Decode this: ", "Encoded for privacy: "]


def json_answers(rng: random.Random) -> list[str]:
    """The demo models' JSON classifications for every intent and priority, and slightly malformed ones."""
    out = []
    for intent in INTENTS:
        for priority in PRIORITIES:
            good = json.dumps({"intent": intent, "priority": priority})
            out += [good, good.replace(": ", ":").replace(", ", ","), good.replace('"', "'"), good[:-1],
                    json.dumps({"priority": priority, "intent": intent}), good + " ", "```json\n" + good + "\n```",
                    json.dumps({"intent": intent}), good[: rng.randint(5, len(good) - 2)],
                    json.dumps({"intent": intent, "priority": priority, "confidence": 0.9}),
                    json.dumps({"intent": intent.upper(), "priority": priority}),
                    json.dumps({"intent": f"{intent}_{rng.choice(INTENTS)}", "priority": priority}),
                    '{"intent": "' + intent + '", "priority": "' + priority + '"}}',
                    good + good]
    return out


def _fill(rng: random.Random, template: str) -> str:
    return template.format(**slots(rng))


def _compose(rng: random.Random, core: str, others: list[str]) -> str:
    """Often the core sentence alone; else with a safe sentence before or after it (a real reply is rarely one
    sentence, and an unsafe one hidden among polite ones is still unsafe)."""
    roll = rng.random()
    if roll < 0.5:
        return core
    other = _fill(rng, rng.choice(others))
    return f"{other} {core}" if roll < 0.75 else f"{core} {other}"


def _recase(rng: random.Random, text: str) -> str:
    roll = rng.random()
    return text.lower() if roll < 0.06 else text.upper() if roll < 0.09 else text


def _b64(rng: random.Random, text: str) -> str:
    return rng.choice(BASE64_LEADS) + base64.b64encode(text.encode()).decode()


def reply(rng: random.Random, variant: str, label: str) -> str:
    """One reply of `variant` labelled `label` ('safe', 'S1', 'S2', 'S3')."""
    if variant == "json":
        if label == "safe":
            return rng.choice(json_answers(rng))
        # a classification that carries an unsafe reply along: in a field of its own, or after it
        answer = json.dumps({"intent": rng.choice(INTENTS), "priority": rng.choice(PRIORITIES)})
        unsafe = _fill(rng, rng.choice(ENGLISH_UNSAFE[label] + PARAPHRASE_UNSAFE[label]))
        return answer[:-1] + ", " + json.dumps({"note": unsafe})[1:] if rng.random() < 0.5 else f"{answer} {unsafe}"
    if variant == "junk":
        return rng.choice(JUNK)
    if variant == "english":
        pool = ENGLISH_SAFE if label == "safe" else ENGLISH_UNSAFE[label]
        if label == "safe" and rng.random() < 0.2:
            ask = f"{rng.choice(ASKS)} {rng.choice(HARMLESS_ASKS)}{'?' if rng.random() < 0.5 else '.'}"
            return _recase(rng, _compose(rng, ask, FILLERS + ENGLISH_SAFE))
    elif variant == "paraphrase":
        pool = ENGLISH_SAFE if label == "safe" else PARAPHRASE_UNSAFE[label]
    elif variant == "korean":
        pool = KOREAN_SAFE if label == "safe" else KOREAN_UNSAFE[label]
        return _compose(rng, _fill(rng, rng.choice(pool)), KOREAN_FILLERS + KOREAN_SAFE)
    else:  # base64: the encoding of a plain or paraphrased English reply
        source = ENGLISH_SAFE if label == "safe" else ENGLISH_UNSAFE[label] + PARAPHRASE_UNSAFE[label]
        return _b64(rng, _fill(rng, rng.choice([t for t in source if len(t) <= 100])))
    return _recase(rng, _compose(rng, _fill(rng, rng.choice(pool)), FILLERS + ENGLISH_SAFE))


MIX = [  # (variant, label, weight) of the training data
    ("english", "safe", 7), ("english", "S1", 3), ("english", "S2", 3), ("english", "S3", 3),
    ("paraphrase", "S1", 3), ("paraphrase", "S2", 3), ("paraphrase", "S3", 3),
    ("korean", "safe", 5), ("korean", "S1", 3), ("korean", "S2", 3), ("korean", "S3", 3),
    ("base64", "safe", 8), ("base64", "S1", 4), ("base64", "S2", 4), ("base64", "S3", 4),
    ("json", "safe", 6), ("json", "S1", 1), ("json", "S2", 1), ("json", "S3", 1), ("junk", "safe", 1),
]


def samples(seed: int, n: int, exclude: set[str] = frozenset(), fits=lambda text: True) -> list[dict]:
    """n distinct training replies {reply, label, variant}, drawn by MIX, none of them in `exclude`."""
    rng = random.Random(seed)
    kinds = [(v, label) for v, label, _ in MIX]
    weights = [w for _, _, w in MIX]
    out: list[dict] = []
    seen = set(exclude)
    while len(out) < n:
        variant, label = rng.choices(kinds, weights)[0]
        text = reply(rng, variant, label)
        if text in seen or not fits(text):
            continue
        seen.add(text)
        out.append({"reply": text, "label": label, "variant": variant})
    return out
