--
-- plan_check.sql: the differential helpers of the suites that compare a
-- sharded schema with its local twins (cross_joins, multi_stage, stages,
-- subquery_narrowing).
-- Each suite drops them before three_nodes_end.sql.
--
--   plan_explain(query): its EXPLAIN (COSTS OFF), the temporary tables'
--   serial numbers (which count the planner's attempts) left out
--
--   plan_check(query, sharded, local): the same rows in both schemas, how
--   many, and the plan:
--     one scan: <strategy>        one ColocatedJoin runs the whole join
--     PostgreSQL                  no ColocatedJoin
--     PostgreSQL over: <s> | ...  PostgreSQL joins what ColocatedJoin scans return
--   (over the plain tables a hint would be ignored anyway: a comment there)
--
CREATE FUNCTION public.plan_explain(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		RETURN NEXT regexp_replace(line, 'colojoin_move_[0-9]+_', 'colojoin_move_N_', 'g');
	END LOOP;
END
$$;
CREATE FUNCTION public.plan_check(query text, sharded text, local text,
								  OUT same boolean, OUT nrows int, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	scans int := 0;
	pg_joins int := 0;
	strategies text[] := '{}';
	s text[];
BEGIN
	PERFORM set_config('search_path', sharded || ', public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Custom Scan \(ColocatedJoin\)' THEN
			scans := scans + 1;
		ELSIF line ~ '(Nested Loop|Hash Join|Merge Join|Hash Right|Hash Left|Hash Full|Hash Anti|Hash Semi|Merge Left|Merge Right|Merge Full|Merge Anti|Merge Semi|SubPlan)' THEN
			pg_joins := pg_joins + 1;
		END IF;
		IF line ~ 'Strategy:' THEN
			strategies := strategies || regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	plan := CASE WHEN scans = 0 THEN 'PostgreSQL'
				 WHEN scans = 1 AND pg_joins = 0 THEN 'one scan: ' || strategies[1]
				 ELSE 'PostgreSQL over: ' || array_to_string(strategies, ' | ') END;
	s := rows_of(query, sharded);
	same := s = rows_of(replace(query, '/*+', '/* '), local);
	nrows := cardinality(s);
	PERFORM set_config('search_path', 'public', true);
END
$$;
