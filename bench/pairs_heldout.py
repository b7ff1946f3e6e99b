"""A held-out, labelled set of memory pairs for judging UPDATE detection.

Each ``Pair`` is two memories an agent might store one after the other: ``older`` first, ``newer``
later. ``update`` says whether the newer memory changes what the older one said, so that the older
one no longer holds.

* ``update=False`` pairs are look-alikes: they share words and often a whole sentence structure, but
  state two facts that are both true (two rooms, two environments, two people, a default beside an
  exception, a second item added, ...). A server may rank the newer one first in recall, which is
  harmless, but it must never offer the older one as a candidate to supersede, nor mark it superseded.
* ``update=True`` pairs are real updates: the same fact about the same thing, now different. Some are
  worded much like their older memory; many share few words with it (another verb, another order,
  a reason added, the old value not repeated).

``shape`` names the kind of pair (see ``SHAPES``, ``LOOKALIKE_SHAPES``, ``UPDATE_SHAPES``) so that
results can be broken down by kind. ``language`` is "en" for most pairs and "de", "es" or "fr" for a
few, where both memories are in that language.

The set was written on 2026-11-26, apart from the code it measures: its author did not read the
server's update logic nor the other update benchmarks while writing it. Everything in it is
fictional (people, companies, products, numbers, addresses).

How to use it: for each pair, start from an empty store (or a store holding only unrelated memories),
store ``older``, then store ``newer`` and record (a) whether the server offered ``older`` as an update
candidate and (b) whether it marked ``older`` as superseded. Over ``update=False`` pairs both rates
should be near zero (look-alikes offered or marked); over ``update=True`` pairs rate (a) is the
share of real updates found. Report by ``shape`` and by ``language`` as well as in total. Import
runs ``_check()``, which fails loudly if the set loses its counts or gains a duplicate.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    shape: str  # the kind of pair, one of SHAPES
    older: str  # the earlier memory, one or two sentences
    newer: str  # the later memory
    update: bool  # True when newer changes what older said (older no longer holds)
    language: str = "en"  # "en", or "de", "es", "fr" when both memories are in that language


def _same(shape: str, older: str, newer: str, language: str = "en") -> Pair:
    """A look-alike pair: both memories hold."""
    return Pair(shape, older, newer, False, language)


def _upd(shape: str, older: str, newer: str, language: str = "en") -> Pair:
    """A real update: the newer memory replaces what the older one said."""
    return Pair(shape, older, newer, True, language)


_LOOKALIKES: list[Pair] = [
    # number-named: two things told apart only by the number that names them
    _same(
        "number-named",
        "Room 214 has the working projector and seats twelve people.",
        "Room 218 has the big whiteboard wall and seats eight people.",
    ),
    _same(
        "number-named",
        "Port 8443 on the edge firewall is open for the admin console.",
        "Port 9443 on the edge firewall is open for the metrics exporter.",
    ),
    _same(
        "number-named",
        "Ticket OPS-1182 is blocked, waiting on an answer from the vendor.",
        "Ticket OPS-1128 is blocked, waiting on sign-off from legal.",
    ),
    _same(
        "number-named",
        "The 47 bus stops right outside the clinic on Harrow Street.",
        "The 74 bus stops right outside the library on Harrow Street.",
    ),
    _same(
        "number-named",
        "Invoice 20931 from Brightwell Supplies was paid on 3 March.",
        "Invoice 20939 from Brightwell Supplies is still unpaid; it is due on 30 March.",
    ),
    _same(
        "number-named",
        "Chapter 7 of the thesis draft still needs the new figures.",
        "Chapter 9 of the thesis draft still needs its references checked.",
    ),
    _same(
        "number-named",
        "PR #882 adds retry logic to the upload client; waiting on Tomasz to review.",
        "PR #892 adds retry logic to the download client; waiting on Tomasz to review.",
    ),
    _same(
        "number-named",
        "API v2 returns timestamps as Unix seconds.",
        "API v3 returns timestamps as ISO 8601 strings.",
    ),
    _same(
        "number-named",
        "The floor 3 kitchen has the good espresso machine.",
        "The floor 5 kitchen has the only dishwasher that works.",
    ),
    _same(
        "number-named",
        "Lane 4 at the Millbrook pool is kept for lap swimming on weekday mornings.",
        "Lane 6 at the Millbrook pool is kept for aqua aerobics on weekday mornings.",
    ),
    _same(
        "number-named",
        "Batch 1174 of the oat milk passed the quality check on Monday.",
        "Batch 1175 of the oat milk failed the quality check on Monday: pH too low.",
    ),
    # environment: staging, production, dev, QA
    _same(
        "environment",
        "The staging database runs Postgres 15 on a machine with 4 GB of RAM.",
        "The production database runs Postgres 15 on a machine with 64 GB of RAM.",
    ),
    _same(
        "environment",
        "The new_checkout feature flag is switched on in staging.",
        "The new_checkout feature flag stays off in production until the launch review.",
    ),
    _same("environment", "Dev logs are kept for 3 days.", "Production logs are kept for 90 days."),
    _same(
        "environment",
        "Staging deploys happen automatically on every merge to main.",
        "Production deploys need a manual approval from whoever is on call.",
    ),
    _same(
        "environment",
        "The dev environment uses the Paylode test keys.",
        "The prod environment uses the live Paylode keys, which are kept in the vault.",
    ),
    _same(
        "environment",
        "In staging the session timeout is 8 hours so testers don't keep getting logged out.",
        "In production the session timeout is 30 minutes.",
    ),
    _same(
        "environment",
        "The QA environment lives at qa.lumenfield.test.",
        "The UAT environment lives at uat.lumenfield.test.",
    ),
    # group-exception: a rule for one group beside a default that still holds
    _same(
        "group-exception",
        "Employees get 25 days of annual leave.",
        "Interns get 15 days of annual leave instead of the usual 25.",
    ),
    _same(
        "group-exception",
        "Expense reports are approved by your direct manager.",
        "Expense reports over 2,000 euros also need approval from finance.",
    ),
    _same(
        "group-exception",
        "All staff badge in through the main entrance on Quay Road.",
        "Night-shift staff badge in through the loading dock door instead.",
    ),
    _same(
        "group-exception",
        "Pull requests need one approval before they can be merged.",
        "Pull requests that touch the billing module need two approvals before merging.",
    ),
    _same(
        "group-exception",
        "Students can borrow library books for three weeks.",
        "Postgraduate students can borrow library books for a whole term.",
    ),
    _same(
        "group-exception",
        "By default, orders ship by standard post and take 3 to 5 days.",
        "Orders from Gold members ship express by default.",
    ),
    _same(
        "group-exception",
        "The office is open from 8 am to 7 pm on weekdays.",
        "The wet lab in the office closes at 5 pm on weekdays for safety reasons.",
    ),
    # now-swap: "now" with one word swapped; both facts hold
    _same("now-swap", "We now accept payments by bank transfer.", "We now accept payments by cheque."),
    _same(
        "now-swap",
        "The Eastgate clinic now offers flu shots on Saturdays.",
        "The Eastgate clinic now offers blood tests on Saturdays.",
    ),
    _same(
        "now-swap",
        "Mira now runs the onboarding sessions for new hires.",
        "Mira now runs the monthly retro for the whole department.",
    ),
    _same(
        "now-swap",
        "The Fieldnote app now supports dark mode.",
        "The Fieldnote app now supports offline mode.",
    ),
    _same(
        "now-swap",
        "The café on Orchard Lane now opens at 7 on weekdays.",
        "The bakery on Orchard Lane now opens at 7 on weekdays.",
    ),
    _same(
        "now-swap",
        "Our nightly backup now includes the wiki.",
        "Our nightly backup now includes the CRM database.",
    ),
    _same(
        "now-swap",
        "The help centre is now available in Portuguese.",
        "The help centre is now available in Korean.",
    ),
    # two-people: two people, each with their own thing
    _same(
        "two-people",
        "Lena's work laptop is a 14-inch Corvel with 32 GB of RAM.",
        "Jonas's work laptop is a 14-inch Corvel with 16 GB of RAM.",
    ),
    _same("two-people", "Priya is allergic to peanuts.", "Dev is allergic to shellfish."),
    _same(
        "two-people",
        "Carlos prefers to be contacted on chat, not by email.",
        "Amara prefers to be contacted by email, not on chat.",
    ),
    _same("two-people", "My sister's birthday is on 12 April.", "My brother's birthday is on 21 April."),
    _same(
        "two-people",
        "Oskar is on call this week for the payments service.",
        "Yuki is on call this week for the search service.",
    ),
    _same(
        "two-people",
        "Hannah sits by the window on the north side of the open-plan area.",
        "Ravi sits by the window on the south side of the open-plan area.",
    ),
    _same(
        "two-people",
        "Grandma takes her blood pressure tablet at 8 am.",
        "Grandpa takes his blood pressure tablet at 8 pm.",
    ),
    # two-services: two services with their own values
    _same(
        "two-services",
        "The auth service has a request timeout of 5 seconds.",
        "The billing service has a request timeout of 30 seconds.",
    ),
    _same(
        "two-services",
        "orders-api is deployed with 3 replicas.",
        "inventory-api is deployed with 5 replicas.",
    ),
    _same(
        "two-services",
        "The search service caches results for 10 minutes.",
        "The recommendations service caches results for 6 hours.",
    ),
    _same(
        "two-services",
        "notifications-worker consumes from the events-high queue.",
        "email-worker consumes from the events-low queue.",
    ),
    _same("two-services", "The API gateway logs at INFO level.", "The job scheduler logs at DEBUG level."),
    _same(
        "two-services",
        "The image-resizer service is owned by the media team.",
        "The thumbnail-cache service is owned by the platform team.",
    ),
    _same(
        "two-services",
        "The payments service retries failed webhooks 5 times.",
        "The shipping service retries failed webhooks 3 times.",
    ),
    # region
    _same(
        "region",
        "Data for our EU customers is stored in Frankfurt.",
        "Data for our US customers is stored in Virginia.",
    ),
    _same("region", "The us-east-1 cluster has 12 nodes.", "The eu-west-1 cluster has 8 nodes."),
    _same(
        "region",
        "In Canada, shipping is free on orders over 50 CAD.",
        "In Australia, shipping is free on orders over 80 AUD.",
    ),
    _same(
        "region",
        "The APAC support line is open 9 to 6, Singapore time.",
        "The EMEA support line is open 9 to 6, London time.",
    ),
    _same(
        "region",
        "Orders shipped to Ontario are charged 13% sales tax.",
        "Orders shipped to Alberta are charged 5% sales tax.",
    ),
    _same(
        "region",
        "The northern warehouse closes at 4 pm on Fridays.",
        "The southern warehouse closes at 6 pm on Fridays.",
    ),
    _same("region", "The Lisbon office has 40 desks.", "The Porto office has 25 desks."),
    # platform
    _same("platform", "The iOS app needs at least iOS 16.", "The Android app needs at least Android 10."),
    _same(
        "platform",
        "On Linux the config file lives at ~/.config/tessel/config.toml.",
        "On Windows the config file lives at %APPDATA%\\Tessel\\config.toml.",
    ),
    _same(
        "platform",
        "Push notifications on Android are sent through FCM.",
        "Push notifications on iOS are sent through APNs.",
    ),
    _same(
        "platform",
        "The macOS build is signed with the Developer ID certificate.",
        "The Windows build is signed with the EV code-signing certificate.",
    ),
    _same(
        "platform",
        "In the web app, uploads are limited to 100 MB.",
        "In the mobile app, uploads are limited to 25 MB.",
    ),
    _same(
        "platform",
        "Android releases go out as a staged rollout starting at 10%.",
        "iOS releases go out as a phased release over 7 days.",
    ),
    _same(
        "platform",
        "The console version of Skyreach runs at 60 fps.",
        "The handheld version of Skyreach runs at 30 fps.",
    ),
    # version-line: two supported versions at once
    _same(
        "version-line",
        "Version 4.x of the Quarry SDK supports Python 3.8 and newer.",
        "Version 5.x of the Quarry SDK supports Python 3.10 and newer.",
    ),
    _same(
        "version-line",
        "We still ship security fixes for the 2.3 line until June.",
        "We ship security and feature fixes for the 3.1 line.",
    ),
    _same(
        "version-line",
        "Builds on Node 18 use the old lockfile format.",
        "Builds on Node 20 use the new lockfile format.",
    ),
    _same(
        "version-line",
        "Release 22.04 of Harbor OS gets updates until 2027.",
        "Release 24.04 of Harbor OS gets updates until 2029.",
    ),
    _same(
        "version-line",
        "Customers on plugin 7.2 have to use the legacy importer.",
        "Customers on plugin 8.0 use the new importer.",
    ),
    _same(
        "version-line",
        "The 3.x branch of the reporting tool still exports to XLS.",
        "The 4.x branch of the reporting tool exports to XLSX only.",
    ),
    # time-of-day-different-jobs
    _same(
        "time-of-day-different-jobs",
        "At 2 am the cron job rotates the logs.",
        "At 3 am the cron job rebuilds the search index.",
    ),
    _same(
        "time-of-day-different-jobs",
        "The morning shift restocks the shelves.",
        "The evening shift counts the tills.",
    ),
    _same(
        "time-of-day-different-jobs",
        "Every day at 06:00 the backup job snapshots the database.",
        "Every day at 06:30 the report job emails the sales summary.",
    ),
    _same(
        "time-of-day-different-jobs",
        "At noon the robot vacuum cleans the kitchen.",
        "At 4 pm the robot vacuum cleans the living room.",
    ),
    _same(
        "time-of-day-different-jobs",
        "The 9 am stand-up is for the mobile team.",
        "The 9:30 am stand-up is for the web team.",
    ),
    _same(
        "time-of-day-different-jobs",
        "At midnight a job purges expired sessions.",
        "At 1 am a job purges expired password-reset tokens.",
    ),
    # same-verb-different-object
    _same(
        "same-verb-different-object",
        "I renewed my passport in January.",
        "I renewed my driving licence in January.",
    ),
    _same(
        "same-verb-different-object",
        "We migrated the wiki to Pagewell last quarter.",
        "We migrated the bug tracker to Tasklane last quarter.",
    ),
    _same(
        "same-verb-different-object",
        "Anna reviewed the budget proposal on Tuesday.",
        "Anna reviewed the hiring plan on Tuesday.",
    ),
    _same(
        "same-verb-different-object",
        "The team deprecated the XML export.",
        "The team deprecated the legacy login page.",
    ),
    _same(
        "same-verb-different-object",
        "I paid the electricity bill for March.",
        "I paid the water bill for March.",
    ),
    _same(
        "same-verb-different-object",
        "We archived the 2023 marketing assets.",
        "We archived the 2023 sales decks.",
    ),
    _same(
        "same-verb-different-object",
        "Sam booked the flights for the offsite.",
        "Sam booked the hotel for the offsite.",
    ),
    # additive: a second item added, the first still holds
    _same(
        "additive",
        "We use Faultline for error tracking in the backend.",
        "We also use Faultline for error tracking in the mobile apps.",
    ),
    _same(
        "additive", "The team meets on Mondays for planning.", "The team also meets on Thursdays for a demo."
    ),
    _same("additive", "Ines speaks Spanish and Catalan.", "Ines also speaks some Japanese."),
    _same(
        "additive",
        "Our office has a bike room in the basement.",
        "There are showers in the office basement as well.",
    ),
    _same(
        "additive",
        "The maintenance contract covers hardware repairs.",
        "The maintenance contract also covers software updates for three years.",
    ),
    _same(
        "additive",
        "I subscribed to the Weekly Bytes newsletter.",
        "I subscribed to the Friday Ops Digest too.",
    ),
    _same("additive", "The app can export reports as PDF.", "The app can also export reports as CSV."),
    # plan-tier
    _same("plan-tier", "Free plan users get 5 GB of storage.", "Pro plan users get 100 GB of storage."),
    _same(
        "plan-tier",
        "On the Starter tier, API calls are capped at 1,000 per day.",
        "On the Business tier, API calls are capped at 50,000 per day.",
    ),
    _same(
        "plan-tier",
        "Basic members can book classes 2 days ahead.",
        "Premium members can book classes 7 days ahead.",
    ),
    _same(
        "plan-tier",
        "Free workspaces keep message history for 90 days.",
        "Team workspaces keep message history forever.",
    ),
    _same(
        "plan-tier", "Enterprise customers get a 99.95% uptime SLA.", "Pro customers get a 99.9% uptime SLA."
    ),
    _same("plan-tier", "The Hobby plan allows 1 custom domain.", "The Growth plan allows 10 custom domains."),
    _same(
        "plan-tier", "Student licences cost 4 euros a month.", "Individual licences cost 12 euros a month."
    ),
    # customer: two customers' settings
    _same(
        "customer",
        "Acme Freight wants its invoices sent on the 1st of each month.",
        "Norrland Timber wants its invoices sent on the 15th of each month.",
    ),
    _same(
        "customer",
        "For Halvorsen & Co. the monthly report goes to their CFO, Marit.",
        "For Brightline Dental the monthly report goes to their office manager, Tess.",
    ),
    _same(
        "customer",
        "Customer Zephyr Labs has single sign-on through Keyfort.",
        "Customer Quillstone has single sign-on through Idmesh.",
    ),
    _same(
        "customer",
        "Client Bellmare pays by credit card.",
        "Client Ostara Foods pays by bank transfer, net 30.",
    ),
    _same(
        "customer",
        "Riverbend Clinic's data retention is set to 7 years.",
        "Pinecrest Clinic's data retention is set to 10 years.",
    ),
    _same(
        "customer",
        "The Kowalski account gets a 10% volume discount.",
        "The Ferreira account gets a 15% volume discount.",
    ),
    _same(
        "customer",
        "Tenant 'harbor' runs on the shared cluster.",
        "Tenant 'summit' runs on a dedicated cluster.",
    ),
    # language-locale
    _same(
        "language-locale",
        "The German shop shows prices with a comma as the decimal separator.",
        "The US shop shows prices with a point as the decimal separator.",
    ),
    _same(
        "language-locale", "French users see dates as DD/MM/YYYY.", "American users see dates as MM/DD/YYYY."
    ),
    _same(
        "language-locale",
        "The Japanese translation is done by Keiko's agency.",
        "The Korean translation is done by Min-jun's agency.",
    ),
    _same(
        "language-locale",
        "Support in Spanish is handled by the Madrid team.",
        "Support in Portuguese is handled by the São Paulo team.",
    ),
    _same(
        "language-locale",
        "In the en-GB locale the word is spelled 'colour'.",
        "In the en-US locale the word is spelled 'color'.",
    ),
    _same(
        "language-locale",
        "Hindi pages use the Noto Sans Devanagari font.",
        "Thai pages use the Noto Sans Thai font.",
    ),
    _same(
        "language-locale",
        "The Dutch edition of the newsletter goes out on Tuesdays.",
        "The Flemish edition of the newsletter goes out on Wednesdays.",
    ),
    # weekday: two recurring events on different days
    _same("weekday", "Yoga class is on Tuesdays at 7 pm.", "Pilates class is on Thursdays at 7 pm."),
    _same("weekday", "General waste is collected on Tuesdays.", "Recycling is collected on Fridays."),
    _same(
        "weekday",
        "The team retro happens every other Friday.",
        "The team demo happens every other Wednesday.",
    ),
    _same(
        "weekday", "Noor has piano lessons on Mondays at 4.", "Noor has swimming lessons on Wednesdays at 4."
    ),
    _same(
        "weekday",
        "The farmers' market runs on Saturdays in the square.",
        "The flea market runs on Sundays in the square.",
    ),
    _same("weekday", "On Wednesdays I work from home.", "On Fridays I work from the Leeds office."),
    _same(
        "weekday",
        "The maintenance window for the database is Sunday 02:00-04:00 UTC.",
        "The maintenance window for the load balancers is Tuesday 02:00-04:00 UTC.",
    ),
    # look-alikes in German, Spanish and French
    _same(
        "number-named",
        "Im Raum 3.12 steht der große Drucker für Poster.",
        "Im Raum 3.21 steht der kleine Farbdrucker für Etiketten.",
        "de",
    ),
    _same(
        "two-people",
        "Katrin fährt montags mit dem Rad ins Büro.",
        "Jürgen fährt montags mit der Bahn ins Büro.",
        "de",
    ),
    _same(
        "group-exception",
        "Im Lager gilt grundsätzlich Helmpflicht.",
        "Im Versandbüro des Lagers braucht man keinen Helm, sonst aber schon.",
        "de",
    ),
    _same(
        "environment",
        "En staging, los correos se envían a una bandeja de pruebas.",
        "En producción, los correos se envían a los clientes reales.",
        "es",
    ),
    _same(
        "weekday",
        "Las clases de guitarra de Lucía son los martes a las cinco.",
        "Las clases de natación de Lucía son los jueves a las cinco.",
        "es",
    ),
    _same(
        "region",
        "Les commandes pour la Belgique partent de l'entrepôt de Lille.",
        "Les commandes pour la Suisse partent de l'entrepôt de Lyon.",
        "fr",
    ),
    _same(
        "plan-tier",
        "L'offre gratuite comprend 3 projets.",
        "L'offre Pro comprend des projets illimités.",
        "fr",
    ),
]

_UPDATES: list[Pair] = [
    # value-changed: a new number with its unit
    _upd(
        "value-changed",
        "The staging database has 200 GB of disk.",
        "Staging database disk was resized to 500 GB last night.",
    ),
    _upd(
        "value-changed",
        "Our monthly cloud bill is about 4,200 dollars.",
        "Since the migration the cloud bill runs to roughly 6,800 dollars a month.",
    ),
    _upd(
        "value-changed",
        "The coffee subscription costs 18 euros per bag.",
        "From this month the coffee subscription is 21 euros a bag.",
    ),
    _upd(
        "value-changed", "The cold room is kept at 4 °C.", "After the audit we lowered the cold room to 2 °C."
    ),
    _upd("value-changed", "A monthly bus pass costs 55 pounds.", "Monthly bus passes went up to 62 pounds."),
    _upd(
        "value-changed",
        "Die Warmmiete für die Wohnung beträgt 980 Euro.",
        "Ab Januar zahlen wir für die Wohnung 1.040 Euro warm.",
        "de",
    ),
    # value-reworded: the same fact, another verb or word order, a new value
    _upd(
        "value-reworded",
        "Stand-up meetings last fifteen minutes.",
        "We cut the daily stand-up down to ten minutes.",
    ),
    _upd(
        "value-reworded",
        "Leila works four days a week, Monday to Thursday.",
        "From March Leila is back on a full five-day week.",
    ),
    _upd(
        "value-reworded",
        "The rent on the flat is 1,150 a month.",
        "After the renewal we pay 1,230 monthly for the apartment.",
    ),
    _upd(
        "value-reworded",
        "Shipping to Norway takes about five business days.",
        "Parcels reach Norway in three working days with the new courier.",
    ),
    _upd(
        "value-reworded",
        "Our team has six engineers.",
        "Two people joined, so engineering headcount is eight.",
    ),
    # owner-handover: someone else holds it (the old holder named or not)
    _upd(
        "owner-handover",
        "Marta owns the quarterly OKR document.",
        "The quarterly OKR doc is Felix's responsibility from here on.",
    ),
    _upd(
        "owner-handover",
        "Release management is handled by Kwame.",
        "Kwame handed release management over to Sofia before his leave.",
    ),
    _upd(
        "owner-handover",
        "Tanvir looks after the office plants.",
        "Beatrix is taking care of the office plants now that Tanvir moved teams.",
    ),
    _upd(
        "owner-handover",
        "The data pipeline on-call rotation belongs to the analytics team.",
        "Ownership of the pipeline on-call rotation moved to the platform team.",
    ),
    _upd(
        "owner-handover",
        "Dr. Okafor is my GP.",
        "Since Dr. Okafor retired, I see Dr. Lindqvist as my family doctor.",
    ),
    _upd(
        "owner-handover",
        "Für die Lohnabrechnung ist Frau Becker zuständig.",
        "Herr Yilmaz hat die Lohnabrechnung übernommen.",
        "de",
    ),
    # status-change: a ticket, task or request changes state
    _upd(
        "status-change",
        "Ticket SUP-4410 is open and waiting for the customer's logs.",
        "SUP-4410 was resolved on Friday; the customer confirmed the fix.",
    ),
    _upd(
        "status-change",
        "The kitchen renovation is still at the planning stage.",
        "Kitchen renovation is underway: the builders started on Monday.",
    ),
    _upd(
        "status-change",
        "Aiko's visa application is pending at the consulate.",
        "Aiko's visa was approved and her passport came back today.",
    ),
    _upd("status-change", "PR #517 is still a draft.", "PR #517 got merged into main this morning."),
    _upd(
        "status-change",
        "The monitors we ordered are on backorder.",
        "The monitors arrived and are in the storeroom.",
    ),
    _upd(
        "status-change",
        "The grant proposal is under review.",
        "The grant proposal was rejected; the feedback letter is in the shared drive.",
    ),
    # replaced-with-reason: a tool or vendor replaced, with a reason
    _upd(
        "replaced-with-reason",
        "We send transactional email through Mailvane.",
        "Switched transactional email to Postbird because Mailvane kept landing in spam.",
    ),
    _upd(
        "replaced-with-reason",
        "The team uses Buildkeep for CI.",
        "CI moved to Stepline, since keeping the Buildkeep server alive took too much time.",
    ),
    _upd(
        "replaced-with-reason",
        "Our accountant is Harwick & Sons.",
        "We replaced Harwick & Sons with a freelance accountant, Nadia Blum, because their fees doubled.",
    ),
    _upd(
        "replaced-with-reason",
        "The office coffee comes from Bean Barn.",
        "Roastwell supplies our coffee now; Bean Barn stopped delivering to our area.",
    ),
    _upd(
        "replaced-with-reason",
        "The shared calendar lives in Calendo.",
        "Dropped Calendo for the calendar built into Workhive, as Calendo is being discontinued.",
    ),
    # deadline-moved
    _upd(
        "deadline-moved",
        "The tax return is due on 31 July.",
        "The accountant got us an extension; the tax return is due on 31 October.",
    ),
    _upd(
        "deadline-moved",
        "The beta launch is scheduled for 14 May.",
        "Beta launch slipped two weeks, to 28 May.",
    ),
    _upd(
        "deadline-moved",
        "Submissions for the poster session close on 1 September.",
        "The poster session deadline was extended to 15 September.",
    ),
    _upd(
        "deadline-moved",
        "The data migration must be finished by the end of Q2.",
        "We pulled the data migration forward: it has to be done by the end of May.",
    ),
    _upd(
        "deadline-moved",
        "Marco's thesis defence is planned for June.",
        "Marco's defence got pushed to October because one examiner is on sabbatical.",
    ),
    _upd(
        "deadline-moved",
        "La entrega del informe trimestral es el 10 de abril.",
        "Han aplazado la entrega del informe trimestral al 24 de abril.",
        "es",
    ),
    # limit-raised
    _upd(
        "limit-raised",
        "The maximum upload size on the support form is 10 MB.",
        "The support form now accepts uploads up to 50 MB.",
    ),
    _upd(
        "limit-raised",
        "Each user can have at most 3 API keys.",
        "The per-user API key limit was raised to 10.",
    ),
    _upd(
        "limit-raised",
        "Ines's corporate card limit is 2,000 euros a month.",
        "Ines can spend up to 5,000 euros a month on her corporate card after the promotion.",
    ),
    _upd(
        "limit-raised",
        "Rate limit on the public API: 60 requests per minute.",
        "Public API rate limit increased to 120 requests per minute.",
    ),
    _upd(
        "limit-raised",
        "The daily withdrawal limit on my bank card is 500.",
        "The bank raised my daily cash withdrawal cap to 1,000.",
    ),
    # decision-reversed
    _upd(
        "decision-reversed",
        "We decided to rewrite the mobile app as one cross-platform codebase.",
        "After the spike we dropped the cross-platform rewrite; the mobile apps stay native.",
    ),
    _upd(
        "decision-reversed",
        "We chose not to hire a second designer this year.",
        "Leadership reversed the freeze call, so we're hiring a second designer after all.",
    ),
    _upd(
        "decision-reversed",
        "The team agreed to stop doing releases on Fridays.",
        "Friday releases are back on after the vote in the retro.",
    ),
    _upd(
        "decision-reversed",
        "The plan is to sell the old van.",
        "We're keeping the old van after all; the buyer fell through and it passed inspection.",
    ),
    _upd(
        "decision-reversed",
        "We decided to keep billing inside the monolith.",
        "Billing is getting split out of the monolith after all, per the architecture review.",
    ),
    # location-moved
    _upd(
        "location-moved",
        "The spare keys are in the blue drawer in the hall.",
        "I moved the spare keys to the lockbox by the garage.",
    ),
    _upd(
        "location-moved",
        "The server rack is in the basement of building B.",
        "We relocated the rack to the new data room on the second floor of building C.",
    ),
    _upd(
        "location-moved",
        "Weekly team lunch is at Casa Vela.",
        "Team lunch moved to the Thai place on Corder Street.",
    ),
    _upd(
        "location-moved",
        "Our registered office is at 12 Millbrook Lane, Dunmore.",
        "Registered office address changed to Unit 4, Quayside Park, Dunmore.",
    ),
    _upd(
        "location-moved",
        "Backups are stored in the bucket northwind-backups-old.",
        "Since last week's move, backups live in the nw-archive bucket.",
    ),
    _upd(
        "location-moved",
        "El almacén de repuestos está en el polígono de Getafe.",
        "El mes pasado trasladamos el almacén de repuestos a Alcalá de Henares.",
        "es",
    ),
    # renamed
    _upd("renamed", "The chat channel for incidents is #fire.", "#fire was renamed to #incidents."),
    _upd(
        "renamed",
        "The project codename is Bluejay.",
        "Bluejay has been rebranded as Lumen Notes for the launch.",
    ),
    _upd(
        "renamed",
        "The default branch of the repo is called master.",
        "After Tuesday's rename the default branch is main.",
    ),
    _upd("renamed", "The service is called user-profile-svc.", "user-profile-svc is now named identity-svc."),
    _upd("renamed", "Our band is called The Late Ferries.", "We changed the band's name to Harbour Lights."),
    # schedule-changed
    _upd("schedule-changed", "The gym is open from 6 am to 10 pm.", "Gym hours changed to 7 am till 9 pm."),
    _upd(
        "schedule-changed",
        "The weekly sync with design is on Tuesdays at 3.",
        "Design sync moved to Wednesday mornings.",
    ),
    _upd(
        "schedule-changed",
        "Payroll runs on the 25th of each month.",
        "Payroll is processed on the last working day of the month from now on.",
    ),
    _upd(
        "schedule-changed",
        "The nightly ETL starts at 1 am.",
        "Nightly ETL kicks off at 3 am to stay clear of the backup window.",
    ),
    _upd(
        "schedule-changed",
        "The dog walker comes on Monday, Wednesday and Friday.",
        "The dog walker switched to Tuesdays and Thursdays.",
    ),
    _upd(
        "schedule-changed",
        "La réunion d'équipe a lieu le lundi à 9 h.",
        "La réunion d'équipe est déplacée au mardi à 10 h.",
        "fr",
    ),
    # negated: no longer so
    _upd(
        "negated",
        "We offer free returns within 30 days.",
        "Free returns have been discontinued; customers pay for return shipping.",
    ),
    _upd(
        "negated",
        "I take vitamin D every morning.",
        "Stopped taking vitamin D after the blood test came back normal.",
    ),
    _upd(
        "negated",
        "The office provides free lunch on Fridays.",
        "No more free Friday lunch because of the budget cut.",
    ),
    _upd(
        "negated",
        "We publish a changelog with every release.",
        "We no longer publish a changelog per release.",
    ),
    _upd(
        "negated", "Tomasz is on the hiring committee.", "Tomasz has stepped down from the hiring committee."
    ),
    _upd(
        "negated", "Le cabinet est ouvert le samedi matin.", "Le cabinet n'ouvre plus le samedi matin.", "fr"
    ),
    # version-bumped
    _upd(
        "version-bumped", "The backend runs on Python 3.10.", "Backend upgraded to Python 3.12 last sprint."
    ),
    _upd(
        "version-bumped",
        "We're on version 2.4 of the Ledgerly SDK.",
        "Bumped the Ledgerly SDK to 3.0; the old auth helpers are gone.",
    ),
    _upd(
        "version-bumped",
        "The thermostat's firmware is version 1.8.",
        "The thermostat updated itself to firmware 2.1 overnight.",
    ),
    _upd(
        "version-bumped",
        "The analytics warehouse runs Postgres 13.",
        "After the weekend upgrade, the analytics warehouse is on Postgres 16.",
    ),
    _upd(
        "version-bumped",
        "The style guide is at revision 5.",
        "Revision 6 of the style guide is out and replaces rev 5.",
    ),
    # contact-changed
    _upd(
        "contact-changed",
        "The building manager can be reached at 0161 555 0142.",
        "The building manager has a new number: 0161 555 0199.",
    ),
    _upd(
        "contact-changed",
        "Send invoices to accounts@harwick.example.",
        "From May, invoices should go to billing@harwick.example.",
    ),
    _upd(
        "contact-changed",
        "Priya's email address is priya.n@oldcorp.example.",
        "Priya moved jobs; write to her at priya@fernlabs.example.",
    ),
    _upd(
        "contact-changed",
        "Our contact at Tiller Systems is Joe Brandt.",
        "Joe Brandt left Tiller Systems, so we deal with Ada Voss there.",
    ),
    _upd(
        "contact-changed",
        "The plumber's mobile is 07700 900412.",
        "Plumber changed his mobile number to 07700 900876.",
    ),
    _upd(
        "contact-changed",
        "Le numéro du support de Verdalys est le 01 84 60 22 13.",
        "Verdalys a changé de numéro de support : c'est désormais le 01 84 60 35 70.",
        "fr",
    ),
]

PAIRS: list[Pair] = _LOOKALIKES + _UPDATES

LOOKALIKE_SHAPES: tuple[str, ...] = (
    "number-named",
    "environment",
    "group-exception",
    "now-swap",
    "two-people",
    "two-services",
    "region",
    "platform",
    "version-line",
    "time-of-day-different-jobs",
    "same-verb-different-object",
    "additive",
    "plan-tier",
    "customer",
    "language-locale",
    "weekday",
)

UPDATE_SHAPES: tuple[str, ...] = (
    "value-changed",
    "value-reworded",
    "owner-handover",
    "status-change",
    "replaced-with-reason",
    "deadline-moved",
    "limit-raised",
    "decision-reversed",
    "location-moved",
    "renamed",
    "schedule-changed",
    "negated",
    "version-bumped",
    "contact-changed",
)

SHAPES: tuple[str, ...] = LOOKALIKE_SHAPES + UPDATE_SHAPES

LANGUAGES: tuple[str, ...] = ("en", "de", "es", "fr")

MIN_LOOKALIKES = 110
MIN_LOOKALIKE_SHAPES = 15
MIN_PER_LOOKALIKE_SHAPE = 5
MIN_UPDATES = 60
MIN_UPDATE_SHAPES = 12
MIN_PER_UPDATE_SHAPE = 4
MIN_FOREIGN = 12

_NOW = re.compile(r"\bnow\b", re.IGNORECASE)


def counts() -> dict[tuple[str, bool], int]:
    """Number of pairs per (shape, update)."""
    return dict(Counter((p.shape, p.update) for p in PAIRS))


def _check() -> None:
    problems: list[str] = []
    for p in PAIRS:
        if p.older == p.newer:
            problems.append(f"older == newer: {p.older!r}")
        if not p.older.strip() or not p.newer.strip():
            problems.append(f"empty memory in {p!r}")
        if p.language not in LANGUAGES:
            problems.append(f"unknown language {p.language!r} in {p!r}")
        if p.shape not in SHAPES:
            problems.append(f"shape {p.shape!r} missing from SHAPES")
        wanted = UPDATE_SHAPES if p.update else LOOKALIKE_SHAPES
        if p.shape not in wanted:
            problems.append(f"shape {p.shape!r} used with update={p.update}")
    texts = [(p.older, p.newer) for p in PAIRS]
    for text, n in Counter(texts).items():
        if n > 1:
            problems.append(f"duplicate pair: {text!r}")
    for text, n in Counter(t for pair in texts for t in pair).items():
        if n > 1:
            problems.append(f"memory used in more than one pair: {text!r}")
    if len(set(SHAPES)) != len(SHAPES):
        problems.append("SHAPES has a repeated name")
    used = {p.shape for p in PAIRS}
    if used != set(SHAPES):
        problems.append(f"SHAPES and the shapes used differ: {sorted(used ^ set(SHAPES))}")
    for kind, shapes, least, least_shapes, least_each in (
        (False, LOOKALIKE_SHAPES, MIN_LOOKALIKES, MIN_LOOKALIKE_SHAPES, MIN_PER_LOOKALIKE_SHAPE),
        (True, UPDATE_SHAPES, MIN_UPDATES, MIN_UPDATE_SHAPES, MIN_PER_UPDATE_SHAPE),
    ):
        of_kind = [p for p in PAIRS if p.update is kind]
        if len(of_kind) < least:
            problems.append(f"update={kind}: {len(of_kind)} pairs, want at least {least}")
        if len(shapes) < least_shapes:
            problems.append(f"update={kind}: {len(shapes)} shapes, want at least {least_shapes}")
        per_shape = Counter(p.shape for p in of_kind)
        for shape in shapes:
            if per_shape[shape] < least_each:
                problems.append(f"{shape}: {per_shape[shape]} pairs, want at least {least_each}")
    foreign = [p for p in PAIRS if p.language != "en"]
    if len(foreign) < MIN_FOREIGN:
        problems.append(f"{len(foreign)} foreign-language pairs, want at least {MIN_FOREIGN}")
    updates = [p for p in PAIRS if p.update]
    with_now = [p for p in updates if _NOW.search(p.older) or _NOW.search(p.newer)]
    if 3 * len(with_now) > len(updates):
        problems.append(f"{len(with_now)} of {len(updates)} updates say 'now', want at most a third")
    if problems:
        raise AssertionError("pairs_heldout: " + "; ".join(problems))


_check()
