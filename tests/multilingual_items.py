"""A small multilingual recall set for the tests (the benchmark has its own, larger one).

Four memories each in German, Spanish, French and Japanese, each with one question in English and one
in its own language that paraphrase it, plus six English memories on the same subjects (relatives'
jobs, pets, trips, deadlines, infrastructure) with no questions. Each question is answered by exactly
one item. Written for these tests; not taken from any dataset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    language: str  # "de", "es", "fr", "ja" or "en" (English memories have no questions)
    text: str  # the memory as an agent would store it
    question_en: str = ""  # a question in English that this memory answers
    question_own: str = ""  # the same need, asked in the memory's language


ITEMS: tuple[Item, ...] = (
    # German
    Item(
        "de",
        "Mein Onkel Bernd fährt seit dreißig Jahren Lkw für eine Spedition in Bremen.",
        "What does my uncle do for work?",
        "Was ist der Beruf meines Onkels?",
    ),
    Item(
        "de",
        "Unser Meerschweinchen Krümel braucht jeden Tag frische Paprika wegen des Vitamin C.",
        "What must our guinea pig get every day?",
        "Was gehört täglich in den Napf des Meerschweinchens?",
    ),
    Item(
        "de",
        "Die Bachelorarbeit muss bis zum 15. Januar beim Prüfungsamt eingereicht sein.",
        "When is my thesis due?",
        "Bis wann muss die Abschlussarbeit fertig sein?",
    ),
    Item(
        "de",
        "Hintergrundjobs laufen bei uns über Celery, als Broker nehmen wir RabbitMQ.",
        "What runs our background tasks?",
        "Womit verarbeiten wir asynchrone Aufgaben?",
    ),
    # Spanish
    Item(
        "es",
        "Mi tía Carmen es jueza en un juzgado de lo penal de Bilbao.",
        "What is my aunt's profession?",
        "¿En qué trabaja mi tía?",
    ),
    Item(
        "es",
        "La tortuga Manolo hiberna de noviembre a febrero en una caja en el trastero.",
        "Where does our tortoise spend the winter?",
        "¿Dónde pasa los meses fríos nuestra tortuga?",
    ),
    Item(
        "es",
        "En Semana Santa nos vamos a Marrakech con mis suegros.",
        "Where are we going over Easter?",
        "¿Adónde nos vamos en Pascua?",
    ),
    Item(
        "es",
        "Las imágenes de Docker se publican en el registro interno de GitLab, no en Docker Hub.",
        "Where do we push our container images?",
        "¿Dónde se almacenan nuestros contenedores compilados?",
    ),
    # French
    Item(
        "fr",
        "Mon beau-frère Julien est pilote de ligne chez Air France.",
        "What is my brother-in-law's job?",
        "Que fait mon beau-frère dans la vie ?",
    ),
    Item(
        "fr",
        "Réglisse, notre chat, a rendez-vous chez le vétérinaire le 3 mars pour ses vaccins.",
        "When does the cat get its shots?",
        "Quand la minette doit-elle être piquée ?",
    ),
    Item(
        "fr",
        "Le devis pour le client lyonnais doit partir avant vendredi 18 h.",
        "When must the quote for the client go out?",
        "Jusqu'à quand ai-je pour envoyer la proposition chiffrée ?",
    ),
    Item(
        "fr",
        "Les tests d'intégration tournent dans GitHub Actions avec une base PostgreSQL éphémère.",
        "Where do our integration tests run?",
        "Sur quelle plateforme passent nos tests d'intégration ?",
    ),
    # Japanese
    Item(
        "ja",
        "兄は大阪の銀行で融資の仕事をしている。",
        "What does my older brother do?",
        "お兄さんの職業は？",
    ),
    Item(
        "ja",
        "金魚の水槽は毎週土曜日に三分の一だけ水を替えている。",
        "How often do I change the fish tank water?",
        "魚の世話はどのくらいの間隔でする？",
    ),
    Item(
        "ja",
        "夏休みは家族で石垣島に行く予定。",
        "Where is the family going for summer vacation?",
        "夏の旅行先はどこ？",
    ),
    Item(
        "ja",
        "APIの応答時間は200ミリ秒以内を目標にしている。",
        "What's our target response time for the API?",
        "APIの速さの目標は？",
    ),
    # English (no questions)
    Item("en", "My younger sister teaches year-three pupils at a primary school in Leeds."),
    Item("en", "Our goldfish came from a funfair in 2021 and is somehow still alive."),
    Item("en", "We're spending New Year's Eve in Edinburgh with old university friends."),
    Item("en", "The annual security audit report is due to the board on 1 October."),
    Item("en", "CI caches pip downloads between runs to keep builds under ten minutes."),
    Item("en", "The dog next door barks whenever the postman arrives."),
)
