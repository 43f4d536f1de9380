"""Spider's SQL hardness categories (``split_builders.evidence.sql_hardness``) against Spider's own
evaluation script (``evaluation.py`` of taoyds/spider: ``Evaluator.eval_hardness``).

The table of known cases holds Spider dev queries with the category the official script gives them
(run on Spider's dev set with its ``process_sql`` parser and the schemas of ``tables.json``), chosen to
cover every category and every rule: joins, ``or``, ``like``, ``not in`` sub-queries, ``intersect`` /
``union`` / ``except``, ``having`` with ``between``, ``order by`` an aggregate, a sub-query in ``from``
(a table unit, not a nested query) and a chain of set operators. Over the whole dev set the counts must be
the script's published ones: 248 easy, 446 medium, 174 hard, 166 extra."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from split_builders.errors import UnparseableProgramError
from split_builders.evidence.sql_hardness import (count_component1, count_component2, count_others, hardness,
                                                  hardness_by_row, looks_like_sql, parse)

KNOWN = [  # (Spider dev query, the official script's category)
    ("SELECT count(*) FROM singer", "easy"),
    ("SELECT DISTINCT country FROM singer WHERE age  >  20", "easy"),
    ("SELECT count(DISTINCT pettype) FROM pets", "easy"),
    ("SELECT name ,  country ,  age FROM singer ORDER BY age DESC", "medium"),
    ("SELECT avg(age) ,  min(age) ,  max(age) FROM singer WHERE country  =  'France'", "medium"),
    ("SELECT T1.fname ,  T1.sex FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid  =  T2.stuid GROUP BY T1.stuid "
     "HAVING count(*)  >  1", "medium"),
    ("SELECT name ,  country FROM singer WHERE song_name LIKE '%Hey%'", "medium"),
    ("SELECT count(*) FROM concert WHERE YEAR  =  2014 OR YEAR  =  2015", "medium"),
    ("SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1", "medium"),
    ("SELECT LOCATION ,  name FROM stadium WHERE capacity BETWEEN 5000 AND 10000", "medium"),
    ("SELECT song_name FROM singer WHERE age  >  (SELECT avg(age) FROM singer)", "hard"),
    ("SELECT YEAR FROM concert GROUP BY YEAR ORDER BY count(*) DESC LIMIT 1", "hard"),
    ("SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)", "hard"),
    ("SELECT country FROM singer WHERE age  >  40 INTERSECT SELECT country FROM singer WHERE age  <  30", "hard"),
    ("SELECT name FROM stadium EXCEPT SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  "
     "T2.stadium_id WHERE T1.year  =  2014", "hard"),
    ("SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id  =  T2.singer_id JOIN concert AS "
     "T3 ON T1.concert_id  =  T3.concert_id WHERE T3.year  =  2014", "hard"),
    ("SELECT AirportName FROM Airports WHERE AirportCode NOT IN (SELECT SourceAirport FROM Flights UNION SELECT "
     "DestAirport FROM Flights)", "hard"),
    ("SELECT first_name FROM Professionals UNION SELECT first_name FROM Owners EXCEPT SELECT name FROM Dogs", "hard"),
    ("SELECT T2.name ,  T2.capacity FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id WHERE "
     "T1.year  >=  2014 GROUP BY T2.stadium_id ORDER BY count(*) DESC LIMIT 1", "extra"),
    ("SELECT T2.name ,  T2.location FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id WHERE "
     "T1.Year  =  2014 INTERSECT SELECT T2.name ,  T2.location FROM concert AS T1 JOIN stadium AS T2 ON "
     "T1.stadium_id  =  T2.stadium_id WHERE T1.Year  =  2015", "extra"),
    ("SELECT T1.countryId ,  T1.CountryName FROM Countries AS T1 JOIN CAR_MAKERS AS T2 ON T1.CountryId  =  T2.Country "
     "GROUP BY T1.countryId HAVING count(*)  >  3 UNION SELECT T1.countryId ,  T1.CountryName FROM Countries AS T1 "
     "JOIN CAR_MAKERS AS T2 ON T1.CountryId  =  T2.Country JOIN MODEL_LIST AS T3 ON T2.Id  =  T3.Maker WHERE "
     "T3.Model  =  'fiat';", "extra"),
    ("SELECT DISTINCT T1.model FROM MODEL_LIST AS T1 JOIN CAR_NAMES AS T2 ON T1.Model  =  T2.Model JOIN CARS_DATA AS "
     "T3 ON T2.MakeId  =  T3.Id JOIN CAR_MAKERS AS T4 ON T1.Maker  =  T4.Id WHERE T3.weight  <  3500 AND "
     "T4.FullName != 'Ford Motor Company';", "extra"),
    ("SELECT document_id FROM Paragraphs GROUP BY document_id HAVING count(*) BETWEEN 1 AND 2", "easy"),
    ("SELECT COUNT(*) FROM (SELECT T1.Name FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code  =  "
     "T2.CountryCode WHERE T2.Language  =  \"English\" INTERSECT SELECT T1.Name FROM country AS T1 JOIN "
     "countrylanguage AS T2 ON T1.Code  =  T2.CountryCode WHERE T2.Language  =  \"Dutch\")", "easy"),
]


@pytest.mark.parametrize("query, expected", KNOWN, ids=[f"{i}-{e}" for i, (_, e) in enumerate(KNOWN)])
def test_known_spider_dev_cases_get_the_official_category(query, expected):
    assert hardness(query) == expected


def test_spider_dev_counts_equal_the_official_scripts(shared):
    with gzip.open(shared / "data" / "spider" / "dev.json.gz", "rt", encoding="utf-8") as handle:
        dev = json.load(handle)
    categories = hardness_by_row([example["query"] for example in dev])
    assert len(categories) == 1034
    assert Counter(categories) == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


def test_components_are_counted_as_the_script_counts_them():
    # two joins, a where, an `or` and a `like`: component 1 = 1 (where) + 2 (joins) + 1 (or) + 1 (like) = 5
    sql = parse("SELECT a.x FROM a JOIN b ON a.id = b.id JOIN c ON b.id = c.id WHERE a.y LIKE '%z%' OR a.w = 3")
    assert count_component1(sql) == 5 and count_component2(sql) == 0
    # others: two selected columns, two where conditions, two group-by columns; aggregations: count(*) and
    # avg(b) in select = 2 > 1
    sql = parse("SELECT count(*), avg(b) FROM t WHERE c = 1 AND d = 2 GROUP BY e, f")
    assert count_others(sql) == 4
    # the script's quirk: an `and` of `having` counts as an aggregation (with count(*) in select: two), a
    # having count(*) does not (alone: none)
    assert count_others(parse("SELECT a FROM t GROUP BY a HAVING count(*) > 1 AND max(b) < 3")) == 0
    assert count_others(parse("SELECT count(*) FROM t GROUP BY a HAVING count(*) > 1 AND max(b) < 3")) == 1
    # a sub-query in a condition and a set operator are nested queries; a sub-query in FROM is not
    assert count_component2(parse("SELECT a FROM t WHERE b IN (SELECT b FROM u) UNION SELECT a FROM v")) == 2
    assert count_component2(parse("SELECT count(*) FROM (SELECT a FROM t)")) == 0


def test_unparseable_queries_are_reported_not_guessed():
    with pytest.raises(UnparseableProgramError, match="expected"):
        hardness("SELECT a FROM")
    with pytest.raises(UnparseableProgramError, match="empty"):
        hardness("   ")
    assert hardness_by_row(["SELECT a FROM t", "SELECT FROM WHERE", None]) == ["easy", None, None]


def test_sql_columns_are_recognised():
    assert looks_like_sql(["SELECT a FROM t", "select b from u", "(SELECT c FROM v)"])
    assert not looks_like_sql(["How many singers?", "SELECT a FROM t"])
    assert not looks_like_sql([None, ""])
