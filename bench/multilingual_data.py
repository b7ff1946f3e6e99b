"""Data of the multilingual recall benchmark (``multilingual.py``).

Memories in German, Spanish, French and Japanese, fifteen per language, each with one question in
English and one in its own language. The questions paraphrase their memory rather than repeat its
words, so an English question about a German memory shares almost nothing with it but meaning.

Thirty English memories on the same subjects (relatives' jobs, pets, allergies, trips, deadlines,
databases, deploys, meetings, hobbies, birthdays, preferences) stand beside them and have no
questions. Subjects also overlap across the four languages, so a question must find its own memory,
not merely some text of its language or of its topic. Each question is answered by exactly one item.

Everything here was written for this benchmark; none of it is taken from a dataset.
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
        "Meine Schwester Katrin arbeitet als Tierärztin in einer Kleintierpraxis in Graz.",
        "What does my sister do for a living?",
        "Was macht meine Schwester beruflich?",
    ),
    Item(
        "de",
        "Unsere Katze Mücke ist zwölf Jahre alt und bekommt seit März nur noch Nierendiät-Futter.",
        "Is my cat on a special diet?",
        "Gibt es bei der Ernährung unserer Mieze etwas zu beachten?",
    ),
    Item(
        "de",
        "Ich bin gegen Haselnüsse allergisch, also auch kein Nutella und kein Nougat.",
        "Which kind of nut can't I eat?",
        "Welche Nusssorte verträgt mein Körper nicht?",
    ),
    Item(
        "de",
        "Im Oktober fliegen wir für eine Woche nach Lissabon, das Hotel liegt in der Alfama.",
        "Where are we going for our autumn holiday?",
        "Wohin geht unsere Herbstreise?",
    ),
    Item(
        "de",
        "Die Steuererklärung für 2023 muss spätestens am 31. Juli beim Finanzamt sein.",
        "By when do I have to file my taxes?",
        "Wann endet die Frist für meine Einkommensteuer?",
    ),
    Item(
        "de",
        "Für die Lagerverwaltung nehmen wir PostgreSQL statt MongoDB, weil wir echte Transaktionen brauchen.",
        "Which database did we pick for the warehouse system, and why?",
        "Welches Datenbanksystem nutzt die Inventarsoftware und aus welchem Grund?",
    ),
    Item(
        "de",
        "Auf Produktion deployen wir nur dienstags und donnerstags, und zwar vor 15 Uhr.",
        "On which days are we allowed to ship to prod?",
        "An welchen Wochentagen darf live ausgerollt werden?",
    ),
    Item(
        "de",
        "Das Daily ist jeden Morgen um 9:30 Uhr in Teams und dauert höchstens eine Viertelstunde.",
        "What time does our morning check-in with the team start?",
        "Um wie viel Uhr beginnt die tägliche Teambesprechung?",
    ),
    Item(
        "de",
        "Ich spiele Cello im Laienorchester Neukölln, geprobt wird immer montags.",
        "What instrument do I play?",
        "Welches Musikinstrument beherrsche ich?",
    ),
    Item(
        "de",
        "Unser Hochzeitstag ist der 14. Juni; letztes Jahr haben wir bei Tim Raue gegessen.",
        "When is our wedding anniversary?",
        "An welchem Datum haben wir geheiratet?",
    ),
    Item(
        "de",
        "Ich trinke Kaffee schwarz und ohne Zucker, nach 15 Uhr gar keinen mehr.",
        "How do I take my coffee?",
        "Nehme ich Milch oder Süßes in den Kaffee?",
    ),
    Item(
        "de",
        "Ich programmiere in Neovim mit LazyVim, die Konfiguration liegt in meinem dotfiles-Repo.",
        "Which text editor do I write code in?",
        "Mit welchem Editor arbeite ich beim Coden?",
    ),
    Item(
        "de",
        "Zum 1. Juli ziehen wir nach Leipzig, der Mietvertrag für die neue Wohnung ist unterschrieben.",
        "Which city are we moving to?",
        "Wo werden wir bald wohnen?",
    ),
    Item(
        "de",
        "Mein Termin bei Zahnärztin Dr. Yilmaz ist am 8. Mai um 10 Uhr.",
        "When do I see the dentist?",
        "Wann steht die nächste Kontrolle meiner Zähne an?",
    ),
    Item(
        "de",
        "Das Auto muss bis Ende September zum TÜV, sonst wird es teuer.",
        "When is the car's safety inspection due?",
        "Bis wann muss der Wagen zur Hauptuntersuchung?",
    ),
    # Spanish
    Item(
        "es",
        "Mi prima Lucía es enfermera en el turno de noche del Hospital La Fe de Valencia.",
        "What does my cousin do for work?",
        "¿A qué se dedica mi prima?",
    ),
    Item(
        "es",
        "Toby, mi perro, le tiene pánico a los truenos; cuando hay tormenta se esconde en la bañera.",
        "What frightens my dog?",
        "¿Qué le da miedo a mi perro?",
    ),
    Item(
        "es",
        "Me da migraña cuando duermo menos de seis horas o me salto el desayuno.",
        "What sets off my headaches?",
        "¿Qué me provoca los dolores de cabeza?",
    ),
    Item(
        "es",
        "En abril nos vamos a Japón: unos días en Tokio y luego una semana entera en Kioto.",
        "Where are we travelling in the spring?",
        "¿Adónde viajamos en primavera?",
    ),
    Item(
        "es",
        "El informe trimestral para el cliente hay que entregarlo el 15 de marzo como muy tarde.",
        "What's the deadline for the client's quarterly report?",
        "¿Hasta cuándo tengo para mandar al cliente el reporte de cada tres meses?",
    ),
    Item(
        "es",
        "En la tienda online guardamos las sesiones de usuario en Redis y caducan a los 30 minutos.",
        "How long do login sessions last in the web shop?",
        "¿Cuánto dura una sesión en el e-commerce?",
    ),
    Item(
        "es",
        "Desplegamos con Argo CD; todo cambio en producción pasa por un pull request al repo de infra.",
        "What tool handles our deployments?",
        "¿Qué herramienta usamos para publicar versiones en el clúster?",
    ),
    Item(
        "es",
        "Con el cliente de Sevilla tenemos reunión el primer martes de cada mes a las 11.",
        "When is the monthly call with our client?",
        "¿Cada cuánto vemos al cliente andaluz?",
    ),
    Item(
        "es",
        "Estoy preparando la media maratón de Málaga de diciembre; entreno martes, jueves y domingo.",
        "What race am I training for?",
        "¿En qué prueba voy a correr?",
    ),
    Item(
        "es",
        "El cumpleaños de mi madre es el 3 de septiembre; le encantan los girasoles.",
        "When is my mom's birthday?",
        "¿Qué día nació mi mamá?",
    ),
    Item(
        "es",
        "En los vuelos siempre pido pasillo, nunca ventanilla.",
        "What kind of seat do I like on a plane?",
        "¿Dónde prefiero sentarme cuando voy en avión?",
    ),
    Item(
        "es",
        "Formateamos el código con Prettier y el límite del proyecto es de 100 caracteres por línea.",
        "What's the max line length in our codebase?",
        "¿Cuánto puede medir como mucho un renglón según nuestras normas de estilo?",
    ),
    Item(
        "es",
        "Este verano quiero sacarme el título de buceo Open Water en Tenerife.",
        "What certification do I want to earn this summer?",
        "¿Qué titulación quiero conseguir en los meses de calor?",
    ),
    Item(
        "es",
        "El fontanero viene el jueves a las 9 para arreglar la fuga del baño.",
        "When is the plumber coming?",
        "¿Cuándo pasa el que arregla las tuberías?",
    ),
    Item(
        "es",
        "Mi hijo Mateo empieza la guardería el 9 de septiembre; la entrada es a las 8:45.",
        "When does my son start daycare?",
        "¿Cuándo es el primer día del niño en la escuela infantil?",
    ),
    # French
    Item(
        "fr",
        "Mon père, ancien prof de maths, est à la retraite depuis 2020 et vit à Annecy.",
        "Is my father still working?",
        "Mon papa a-t-il encore un emploi ?",
    ),
    Item(
        "fr",
        "Notre lapin Caramel ne doit pas manger de laitue iceberg, seulement du foin et des herbes.",
        "What must our rabbit not eat?",
        "Quels aliments sont interdits pour notre lapin ?",
    ),
    Item(
        "fr",
        "Je suis intolérant au lactose, donc je prends du lait d'avoine ou du lait sans lactose.",
        "Can I have dairy?",
        "Est-ce que je digère les produits laitiers ?",
    ),
    Item(
        "fr",
        "Du 10 au 17 février, on part au ski à Val Thorens avec les enfants.",
        "Where is our winter sports week?",
        "Où passe-t-on les vacances à la neige ?",
    ),
    Item(
        "fr",
        "Le dossier de demande de subvention ANR doit être déposé avant le 28 novembre à midi.",
        "When is the grant application due?",
        "Quelle est la date limite pour le financement de recherche ?",
    ),
    Item(
        "fr",
        "La base est sauvegardée chaque nuit à 3 h vers un bucket S3 chiffré, avec 30 jours de rétention.",
        "How long do we keep database backups?",
        "Combien de temps conserve-t-on les copies de la BDD ?",
    ),
    Item(
        "fr",
        "La rétro d'équipe a lieu un jeudi sur deux à 16 h, dans la salle Lovelace.",
        "How often is our team retrospective?",
        "À quelle fréquence fait-on le bilan du sprint ?",
    ),
    Item(
        "fr",
        "Je fais de la poterie le mercredi soir dans un atelier à Montreuil.",
        "Which hands-on craft do I do every week?",
        "Quel loisir manuel est-ce que je pratique ?",
    ),
    Item(
        "fr",
        "L'anniversaire de ma fille Inès est le 2 avril, elle veut une fête sur le thème des dinosaures.",
        "What theme does my daughter want for her party?",
        "Quel genre de fête souhaite ma petite ?",
    ),
    Item(
        "fr",
        "Je suis végétarien depuis 2019 : ni viande ni poisson, même à la cantine du bureau.",
        "Do I eat meat?",
        "Quel régime alimentaire est-ce que je suis ?",
    ),
    Item(
        "fr",
        "Dans le projet, on a remplacé Poetry par uv pour gérer les dépendances Python.",
        "Which package manager do we use for Python now?",
        "Quel outil installe nos bibliothèques Python ?",
    ),
    Item(
        "fr",
        "Rendez-vous chez l'ophtalmo le 12 juin à 14 h 30 pour renouveler mes lunettes.",
        "When is my eye exam?",
        "Quand dois-je faire contrôler ma vue ?",
    ),
    Item(
        "fr",
        "On voudrait refaire la cuisine cet été, avec un budget de 15 000 euros maximum.",
        "How much can we spend on the kitchen renovation?",
        "Combien est-on prêts à mettre dans les travaux ?",
    ),
    Item(
        "fr",
        "La nouvelle API de facturation utilisera des UUID v7 plutôt que des entiers auto-incrémentés.",
        "What kind of IDs should the billing service use?",
        "Quel format de clé primaire a-t-on choisi pour le service des factures ?",
    ),
    Item(
        "fr",
        "Le prestataire de paie ne veut jamais de fichiers par e-mail, uniquement via leur portail SFTP.",
        "How should files be sent to the payroll vendor?",
        "Comment transmettre des documents au fournisseur qui gère les salaires ?",
    ),
    # Japanese
    Item(
        "ja",
        "母は駅前の薬局で薬剤師として働いている。",
        "What is my mother's job?",
        "お母さんは何の仕事をしている？",
    ),
    Item(
        "ja",
        "インコのピーちゃんは朝7時にケージから出して、夜は布をかけて寝かせる。",
        "What's the daily routine for our bird?",
        "鳥の世話はどうしている？",
    ),
    Item(
        "ja",
        "毎年3月から4月にかけて花粉症がひどくなるので、早めに耳鼻科で薬をもらっておく。",
        "Which months are worst for my seasonal allergies?",
        "アレルギーの症状が出やすい時期はいつ？",
    ),
    Item(
        "ja",
        "12月の第2週に札幌へ出張して、取引先の工場を見学する予定。",
        "Which city am I visiting for work before the end of the year?",
        "冬に仕事で行く街はどこ？",
    ),
    Item(
        "ja",
        "家計簿アプリのバージョン2は6月30日までにリリースしなければならない。",
        "When does the next version of the budgeting app have to ship?",
        "お金管理アプリの新しい版はいつまでに出す？",
    ),
    Item(
        "ja",
        "ログはFluent Bitで集めてLokiに送っている。Elasticsearchはもう使っていない。",
        "Where do our logs end up?",
        "アプリの出力記録はどこに集約している？",
    ),
    Item(
        "ja",
        "本番で障害が起きたら、まず一つ前のイメージに戻してから原因を調べるのがルール。",
        "What's the first step when production breaks?",
        "サービスが止まったとき最初にやることは？",
    ),
    Item(
        "ja",
        "毎週月曜の午後2時から部長と1on1がある。",
        "When is my one-on-one with my manager?",
        "上司との個人面談はいつ？",
    ),
    Item(
        "ja",
        "週末はよく鎌倉へ写真を撮りに行く。カメラは富士フイルムのX-T4を使っている。",
        "Which camera do I use?",
        "どの機種で撮影している？",
    ),
    Item(
        "ja",
        "父の誕生日は11月2日。日本酒が好きなので、毎年地元の酒蔵のお酒を贈っている。",
        "What gift do I usually give my dad for his birthday?",
        "お父さんへのプレゼントはいつも何？",
    ),
    Item(
        "ja",
        "辛い料理は苦手で、カレーも甘口しか食べられない。",
        "Can I handle spicy food?",
        "刺激の強い料理は食べられる？",
    ),
    Item(
        "ja",
        "コードレビューはGitHubのプルリクエストで行い、マージには最低2人の承認が必要。",
        "How many approvals does a code review need?",
        "取り込む前に何人のOKが要る？",
    ),
    Item(
        "ja",
        "来年の春までにTOEICで800点を取りたい。",
        "What English test score am I aiming for?",
        "英語の試験の目標点は？",
    ),
    Item(
        "ja",
        "健康診断で血圧が高めだと言われたので、塩分を控えている。",
        "Why am I cutting back on salt?",
        "しょっぱいものを減らしているのはなぜ？",
    ),
    Item(
        "ja",
        "娘の保育園のお迎えは、火曜と金曜は夫が担当している。",
        "Which days does my husband collect our daughter?",
        "夫が子どもを迎えに行くのは何曜日？",
    ),
    # English (no questions)
    Item("en", "My brother Tom works as an electrician for a solar installation company in Bristol."),
    Item("en", "Our old dog Biscuit takes a joint supplement every morning with his breakfast."),
    Item("en", "The cat sitter, Mrs. Patel, has a spare key and feeds the cat whenever we travel."),
    Item("en", "I'm allergic to penicillin; amoxicillin gave me hives in 2018."),
    Item("en", "Next August we're driving the ring road around Iceland in a rented camper van."),
    Item("en", "The API migration to v3 has to be finished by the end of Q3."),
    Item("en", "The analytics dashboard reads from a ClickHouse cluster, not the main Postgres database."),
    Item("en", "Staging is rebuilt from scratch every Sunday night, so don't leave test data there."),
    Item("en", "The quarterly planning meeting is in the big conference room on the third floor."),
    Item("en", "I go bouldering at the climbing gym on Tuesday and Friday evenings."),
    Item("en", "My partner's birthday is 22 January; she'd love a voucher for a pottery class."),
    Item("en", "On trains I always book a seat in the quiet carriage."),
    Item("en", "I use the fish shell with the Starship prompt on all my machines."),
    Item("en", "Our landlord is raising the rent by 4% from January."),
    Item("en", "My annual blood test at the GP is booked for 2 May at 8:15; I have to come fasting."),
    Item("en", "The car insurance renews on 1 December, so compare quotes before then."),
    Item("en", "Python services are linted with ruff using the default rules plus import sorting."),
    Item("en", "I prefer sparkling water over still, and no ice."),
    Item("en", "Retro action items live in the team Confluence space under 'Sprint notes'."),
    Item("en", "My niece Emma just started studying architecture in Delft."),
    Item("en", "For the mobile app we chose Firebase Auth instead of building our own login."),
    Item("en", "My son's swimming lessons are on Saturday mornings at the leisure centre."),
    Item("en", "We usually spend Christmas at my in-laws' house in Ohio."),
    Item("en", "The design review for the onboarding flow has moved to next Wednesday at 2 pm."),
    Item("en", "I take vitamin D in winter because my levels were low last year."),
    Item("en", "Invoices over 10,000 euros need sign-off from finance before they go out."),
    Item("en", "I want to read twelve books this year, roughly one a month."),
    Item("en", "My mother-in-law is visiting from 5 to 12 October and will sleep in the study."),
    Item("en", "The on-call rotation changes every Monday at 10 am; the handover happens in Slack."),
    Item("en", "My personal laptop is backed up to an external SSD every Sunday."),
)
