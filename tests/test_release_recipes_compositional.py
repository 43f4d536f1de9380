"""The compositional recipes of ``releases/`` (GeoQuery as written, trial builds of Spider, SCAN and COGS): the
checks of ``test_release_recipes.py``, in a file of their own so that two test processes run the recipes side by side."""

import pytest

from test_release_recipes import (COMPOSITIONAL, check_a_row_moved_in_the_first_config_is_named,
                                  check_the_build_verifies_with_every_config_checked,
                                  check_the_card_records_the_recipe_and_the_trial_changes, recipe_builds)  # noqa: F401


@pytest.mark.parametrize("name", COMPOSITIONAL)
def test_the_build_verifies_with_every_config_checked(name, recipe_builds):  # noqa: F811
    check_the_build_verifies_with_every_config_checked(name, recipe_builds)


@pytest.mark.parametrize("name", COMPOSITIONAL)
def test_the_card_records_the_recipe_and_the_trial_changes(name, recipe_builds):  # noqa: F811
    check_the_card_records_the_recipe_and_the_trial_changes(name, recipe_builds)


@pytest.mark.parametrize("name", COMPOSITIONAL)
def test_a_row_moved_in_the_first_config_is_named(name, recipe_builds, tmp_path, capsys):  # noqa: F811
    check_a_row_moved_in_the_first_config_is_named(name, recipe_builds, tmp_path, capsys)
